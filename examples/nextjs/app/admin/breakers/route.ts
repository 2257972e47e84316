import { statusPage, StoreCircuitBreaker } from 'breakwater/store';
import { sharedBreaker } from '@/lib/shared-breaker';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * The status page of the breakers this app shares through Redis, for an operator: the core's
 * page (the one the Worker's /admin/status serves), behind `Authorization: Bearer $ADMIN_TOKEN`
 * (404 while ADMIN_TOKEN is not set).
 */
export async function GET(request: Request): Promise<Response> {
  const shared = await sharedBreaker('redis');
  const breakers = shared instanceof StoreCircuitBreaker ? [shared] : [];
  return statusPage(request, breakers, { adminToken: process.env.ADMIN_TOKEN });
}
