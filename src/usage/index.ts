import type { Platform } from '../platform.js';
import { usageRoutes } from './routes.js';
import { UsageService } from './service.js';
import { UsageStore } from './store.js';

export { UsageService } from './service.js';
export { UsageReport } from './schemas.js';

/** Usage: what agents report their work consumed, linked to runs and steps, and its totals. */
export function createUsageDomain(platform: Platform) {
  const store = new UsageStore(platform.database.db, platform.database.caps);
  const service = new UsageService({ store, clock: platform.clock, metrics: platform.metrics });
  return { service, routes: usageRoutes(service) };
}
