import { breaker } from '@/lib/breakers';
import { handleChat } from '@/lib/provider';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const anthropic = breaker('anthropic');

export async function POST(request: Request): Promise<Response> {
  return handleChat(anthropic, request, 'nodejs');
}
