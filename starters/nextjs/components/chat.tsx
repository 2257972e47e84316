'use client';

import { useChat } from '@ai-sdk/react';
import { useState, type FormEvent } from 'react';

/** The chat: useChat posts to /api/chat (its default) and shows the answer as it streams. */
export function Chat() {
  const [input, setInput] = useState('');
  const { messages, sendMessage, status, stop, error } = useChat();
  const busy = status === 'submitted' || status === 'streaming';

  function send(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (input.trim() === '') return;
    void sendMessage({ text: input });
    setInput('');
  }

  return (
    <main style={{ maxWidth: '40rem', margin: '2rem auto', padding: '0 1rem', display: 'grid', gap: '1rem' }}>
      <h1>Chat</h1>
      {messages.map((m) => (
        <p key={m.id} data-role={m.role} style={{ whiteSpace: 'pre-wrap' }}>
          <b>{m.role === 'user' ? 'You' : 'Assistant'}: </b>
          {m.parts.map((p) => (p.type === 'text' ? p.text : '')).join('')}
        </p>
      ))}
      {error && (
        <p role="alert" style={{ color: '#cf222e' }}>
          {error.message}
        </p>
      )}
      <form onSubmit={send} style={{ display: 'flex', gap: '0.5rem' }}>
        <input value={input} onChange={(e) => setInput(e.target.value)} placeholder="Ask something" style={{ flex: 1, padding: '0.4rem' }} />
        <button type="submit" disabled={busy}>
          Send
        </button>
        <button type="button" onClick={() => void stop()} disabled={!busy}>
          Stop
        </button>
      </form>
    </main>
  );
}
