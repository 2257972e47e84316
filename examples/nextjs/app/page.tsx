import { registry } from '@/lib/breakers';
import { describe } from '@/lib/provider';

export const dynamic = 'force-dynamic';

const colours: Record<string, string> = { CLOSED: '#1a7f37', OPEN: '#cf222e', HALF_OPEN: '#9a6700' };

/** The Node runtime's breakers, rendered on the server at request time. */
export default function Page() {
  const rows = [...registry].map(([name, breaker]) => ({ name, ...describe(breaker) }));
  return (
    <main>
      <h1>Circuit breakers</h1>
      <p>
        <a href="/chat">Chat</a> (a streamed answer from two models, each behind its breaker),{' '}
        <a href="/chat-ui">the same with useChat</a>
      </p>
      {rows.length === 0 ? (
        <p id="empty">No breaker has been used yet.</p>
      ) : (
        <table cellPadding={6} style={{ borderCollapse: 'collapse' }}>
          <thead>
            <tr>
              <th align="left">breaker</th>
              <th align="left">state</th>
              <th align="right">admitted</th>
              <th align="right">rejected</th>
              <th align="right">failures</th>
              <th align="right">opened</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.name} data-breaker={r.name}>
                <td>{r.name}</td>
                <td className="state" style={{ color: colours[r.state], fontWeight: 600 }}>
                  {r.state}
                </td>
                <td align="right">{r.stats.admitted}</td>
                <td align="right">{r.stats.rejected}</td>
                <td align="right">{r.stats.failures}</td>
                <td align="right">{r.stats.opened}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}
