// Stands in for an unreachable breaker object: every request fails the way an overloaded
// Durable Object does.
export class BreakerObject {
  async fetch() {
    throw new Error('Durable Object is overloaded. Requests queued for too long.');
  }
}
export default {
  async fetch() {
    return new Response('broken object host', { status: 404 });
  },
};
