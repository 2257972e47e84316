import type { Metadata } from 'next';
import './globals.css';

// create-next-app's layout also loads the Geist fonts from `next/font/google`, which downloads
// them at build time; this starter leaves them out so that `next build` works offline too.
export const metadata: Metadata = {
  title: 'breakwater starter',
  description: 'A Next.js app whose LLM calls go through a circuit breaker',
};

export default function RootLayout({ children }: LayoutProps<'/'>) {
  return (
    <html lang="en">
      <body>{children}</body>
    </html>
  );
}
