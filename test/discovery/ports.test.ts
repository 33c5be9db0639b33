import pino from 'pino';
import { Registry } from 'prom-client';
import { DomainMetrics } from '../../src/kernel/metrics.js';
import { OpenConnections } from '../../src/kernel/open-connections.js';
import { createAuditService } from '../../src/audit/index.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Platform } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { autocommit } from '../../src/kernel/tx.js';
import { createDiscoveryDomain, type DiscoveryService } from '../../src/discovery/index.js';
import { createEventLog } from '../../src/events/index.js';
import { InvalidRequest } from '../../src/kernel/errors.js';
import { InProcessNotifier } from '../../src/kernel/notifier.js';
import type { AgentDirectory } from '../../src/kernel/ports.js';
import { FixedWindowRateLimiter } from '../../src/kernel/rate-limiter.js';
import { FakeClock } from '../helpers/clock.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';

/** The service as other domains see it: through the AgentDirectory port. */
describeEachDialect('discovery ports (AgentDirectory)', (dialect) => {
  let database: TestDatabase;
  let handle: DatabaseHandle;
  let notifier: InProcessNotifier;
  let service: DiscoveryService;
  const clock = new FakeClock();

  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    handle = openDatabase(database.options(2));
    await migrateToLatest(handle);
    notifier = new InProcessNotifier();
    const config = loadConfig({ SWITCHBOARD_DATA_DIR: database.dataDir, SWITCHBOARD_HEALTH_TTL_S: '30' });
    const platform: Platform = {
      config,
      database: handle,
      clock,
      notifier,
      logger: pino({ level: 'silent' }),
      publicUrl: () => 'http://127.0.0.1',
      shutdown: new AbortController().signal,
      limiter: new FixedWindowRateLimiter(0, 60, () => clock.now()),
      metrics: new DomainMetrics(new Registry()),
      expressions: { evaluate: () => Promise.reject(new Error('discovery evaluates no expression')) },
      connections: new OpenConnections(),
      audit: createAuditService({ database: handle, clock, config, logger: pino({ level: 'silent' }) }),
    };
    service = createDiscoveryDomain({ platform, events: createEventLog(handle, clock, notifier) }).service;
  });
  afterAll(async () => {
    await notifier.close();
    await handle.close();
    await database.drop();
  });

  it('lookup picks agents for a capability by strategy, skipping unhealthy ones', async () => {
    const directory: AgentDirectory = service;
    await service.register('w1', { capability: 'plan.write' }, 'admin');
    await service.register('w2', { capability: 'plan.write' }, 'admin');
    await service.heartbeat('w1', { load: 0.7 });
    await service.heartbeat('w2', { load: 0.2 });
    const picked = await directory.lookup(autocommit, { capability: 'plan.write', strategy: 'least_loaded', limit: 1 });
    expect(picked).toEqual([expect.objectContaining({ agent_id: 'w2', capability: 'plan.write', health: 'healthy', load: 0.2 })]);
    clock.advance(31_000);
    await service.heartbeat('w1', { load: 0.7 });
    expect((await directory.lookup(autocommit, { capability: 'plan.*' })).map((a) => a.agent_id)).toEqual(['w1']);
    expect((await directory.lookup(autocommit, { capability: 'plan.write', include_unhealthy: true })).map((a) => a.agent_id)).toEqual([
      'w1',
      'w2',
    ]);
    await expect(directory.lookup(autocommit, { capability: 'plan.write', strategy: 'fastest' })).rejects.toBeInstanceOf(InvalidRequest);
  });

  it('search answers natural-language queries', async () => {
    const directory: AgentDirectory = service;
    await service.register(
      'sum',
      { capability: 'doc.summarize', metadata: { description: 'condense a long document into key points' } },
      'admin',
    );
    const [best] = await directory.search({ query: 'summarise a long report', top_k: 1 });
    expect(best?.capability).toMatchObject({ name: 'doc.summarize', agent_id: 'sum' });
    expect(best?.similarity_score).toBeGreaterThan(0.5);
  });
});
