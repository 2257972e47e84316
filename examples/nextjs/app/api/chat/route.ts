import { registry } from '@/lib/breakers';
import { handleChat } from '@/lib/provider';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const anthropic = registry.get('anthropic');

export async function POST(request: Request): Promise<Response> {
  return handleChat(anthropic, request, 'nodejs');
}
