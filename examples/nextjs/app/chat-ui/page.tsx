'use client';

import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport } from 'ai';
import { useEffect, useState, type FormEvent } from 'react';

/** The chat through `useChat` (AI SDK UI): /api/chat-ui streams each answer as it arrives. */
export default function ChatUiPage() {
  const [ready, setReady] = useState(false); // hydrated: the form sends with useChat, not natively
  const [input, setInput] = useState('');
  const { messages, sendMessage, status, stop, error } = useChat({
    transport: new DefaultChatTransport({ api: '/api/chat-ui' }),
  });
  useEffect(() => setReady(true), []);
  const busy = status === 'submitted' || status === 'streaming';

  function send(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (input.trim() === '') return;
    void sendMessage({ text: input });
    setInput('');
  }

  return (
    <main style={{ maxWidth: '40rem' }}>
      <h1>Chat (useChat)</h1>
      <div id="messages">
        {messages.map((m) => (
          <p key={m.id} className="message" data-role={m.role} style={{ whiteSpace: 'pre-wrap' }}>
            <b>{m.role === 'user' ? 'You' : 'Assistant'}: </b>
            <span className="text">{m.parts.map((p) => (p.type === 'text' ? p.text : '')).join('')}</span>
          </p>
        ))}
      </div>
      <form onSubmit={send} style={{ display: 'flex', gap: '0.5rem' }}>
        <input name="prompt" value={input} onChange={(e) => setInput(e.target.value)} placeholder="Ask something" style={{ flex: 1 }} />
        <button type="submit" disabled={!ready || busy}>
          Send
        </button>
        <button type="button" name="stop" onClick={() => void stop()} disabled={!busy}>
          Stop
        </button>
      </form>
      <p id="status" data-status={status}>
        {status}
      </p>
      {error && (
        <p id="error" role="alert" style={{ color: '#cf222e' }}>
          {error.message}
        </p>
      )}
    </main>
  );
}
