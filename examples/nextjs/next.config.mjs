/** @type {import('next').NextConfig} */
const nextConfig = {
  // The Node build of breakwater reads its .wasm from beside its own files: keep it out of the
  // server bundle so the two stay together. (Edge routes import the .wasm as a module instead.)
  // `redis` (for the shared breaker in lib/shared-breaker.ts) is loaded by Node as it is, too.
  serverExternalPackages: ['breakwater', 'redis'],
};

export default nextConfig;
