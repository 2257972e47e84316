import { Suspense } from 'react';
import { Chat } from '@/components/chat';

// With `cacheComponents: true`, `next build` prerenders this page, and useChat draws a random
// chat id while rendering ("Next.js encountered the unstable value `Math.random()` in a Client
// Component"): inside <Suspense> the chat renders per request instead.
export default function Home() {
  return (
    <Suspense fallback={<p style={{ margin: '2rem auto' }}>Loading the chat…</p>}>
      <Chat />
    </Suspense>
  );
}
