'use client';

import { useEffect, useState, type FormEvent } from 'react';

/** The two routes that stream the same chat: over `fetch`, and through the Vercel AI SDK. */
const ROUTES = { fetch: '/api/chat-stream', 'AI SDK': '/api/chat-ai' } as const;

/** A chat box that shows the streamed answer word by word, as it arrives. */
export default function ChatPage() {
  const [ready, setReady] = useState(false); // hydrated: the form posts with fetch, not natively
  const [route, setRoute] = useState<string>(ROUTES.fetch);
  const [prompt, setPrompt] = useState('');
  const [answer, setAnswer] = useState('');
  const [model, setModel] = useState('');
  const [error, setError] = useState('');
  const [status, setStatus] = useState<'idle' | 'streaming' | 'done' | 'failed'>('idle');
  useEffect(() => setReady(true), []);

  async function ask(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    setAnswer('');
    setModel('');
    setError('');
    setStatus('streaming');
    try {
      const res = await fetch(route, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt }),
      });
      if (!res.ok || !res.body) {
        // /api/chat-stream answers { error } as JSON; /api/chat-ai (errorResponse) as plain text.
        const text = await res.text().catch(() => '');
        let message = text || `the server answered ${res.status}`;
        try {
          message = (JSON.parse(text) as { error?: string }).error ?? message;
        } catch {
          /* plain text */
        }
        throw new Error(message);
      }
      setModel(res.headers.get('x-model') ?? '');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        setAnswer((text) => text + value);
      }
      setStatus('done');
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
      setStatus('failed');
    }
  }

  return (
    <main style={{ maxWidth: '40rem' }}>
      <h1>Chat</h1>
      <form onSubmit={ask} style={{ display: 'flex', gap: '0.5rem' }}>
        <select name="route" value={route} onChange={(e) => setRoute(e.target.value)}>
          {Object.entries(ROUTES).map(([label, path]) => (
            <option key={path} value={path}>
              {label}
            </option>
          ))}
        </select>
        <input
          name="prompt"
          value={prompt}
          onChange={(e) => setPrompt(e.target.value)}
          placeholder="Ask something"
          style={{ flex: 1 }}
        />
        <button type="submit" disabled={!ready || status === 'streaming'}>
          Ask
        </button>
      </form>
      {model && <p id="model">Answered by {model}</p>}
      <pre id="answer" data-status={status} style={{ whiteSpace: 'pre-wrap', fontFamily: 'inherit' }}>
        {answer}
      </pre>
      {error && (
        <p id="error" role="alert" style={{ color: '#cf222e' }}>
          {error}
        </p>
      )}
    </main>
  );
}
