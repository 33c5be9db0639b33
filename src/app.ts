import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { createLogger } from './logger.js';
import { createA2aDomain } from './a2a/index.js';
import { createAlertsDomain } from './alerts/index.js';
import { createArtifactsDomain } from './artifacts/index.js';
import { createAuditDomain } from './audit/index.js';
import { authRetention, createAuthDomain, createAuthWorkers, httpAuthentication } from './auth/index.js';
import { createAccessGroups } from './auth/groups/index.js';
import { createClusterDomain, createPrincipalRateLimiter } from './cluster/index.js';
import { APPROVAL_LINK_SETTING, createCoordinationDomain } from './coordination/index.js';
import { createDiscoveryDomain } from './discovery/index.js';
import { createEventsDomain } from './events/index.js';
import { createMessagingDomain } from './messaging/index.js';
import { createNotificationsDomain } from './notifications/index.js';
import { createRetention, type RetentionService } from './retention/index.js';
import { createRoutinesDomain } from './routines/index.js';
import { createTasksDomain } from './tasks/index.js';
import { createUsageDomain } from './usage/index.js';
import { createWebhooksDomain } from './webhooks/index.js';
import type { Config } from './config.js';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { startTracing, type Tracing } from './tracing.js';
import { databaseOptions, openDatabase } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { tablesWithoutAutovacuum, vacuumWhereAutovacuumWont } from './db/autovacuum.js';
import { StorageFullness } from './db/faults.js';
import { PostponedWrites } from './db/postponed-writes.js';
import { buildHttpServer, type HttpServer } from './http/server.js';
import { createMetrics, installWorkerMetrics, installWriteMetrics } from './http/plugins/metrics.js';
import { DomainMetrics } from './kernel/metrics.js';
import { systemClock, type Clock } from './kernel/clock.js';
import { PostgresNotifier } from './db/postgres-notifier.js';
import type { Notifier } from './kernel/notifier.js';
import { OpenConnections } from './kernel/open-connections.js';
import { openNotifier } from './db/notifiers.js';
import type { Platform } from './platform.js';
import { FixedWindowRateLimiter } from './kernel/rate-limiter.js';
import { ExpressionPool } from './kernel/expression-pool.js';
import { mcpRoutes } from './mcp/server.js';
import { humanInputTool } from './mcp/human-input.js';
import { buildResources } from './mcp/resources.js';
import { buildTools, instructions } from './mcp/tools/index.js';
import { Workers } from './workers/workers.js';

export type { Platform };

/** The server's version, from package.json (one level up from src/ and dist/ alike). */
const VERSION = (JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export interface AppOptions {
  config: Config;
  clock?: Clock;
  logger?: Logger;
  /** With `config.tracing`: where spans go instead of the OTLP exporter (tests). */
  spanProcessor?: SpanProcessor;
}

export interface App {
  readonly platform: Platform;
  readonly http: HttpServer;
  /** The retention worker's service (a test runs a pass directly). */
  readonly retention: RetentionService;
  /** Starts listening, then the workers; resolves with the base URL. */
  listen(): Promise<string>;
  /** Stops accepting, drains in-flight requests, stops the workers, closes the database. */
  close(): Promise<void>;
}

/**
 * The composition root: database → stores/services → workers → HTTP. Parts start in that
 * order and stop in reverse.
 */
export async function createApp(options: AppOptions): Promise<App> {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger(config);
  // First, so that every span of the start (migrations aside) has a provider; null costs nothing.
  const tracing: Tracing | null = config.tracing
    ? await startTracing({ config: config.tracing, version: VERSION, spanProcessor: options.spanProcessor })
    : null;
  const database = openDatabase(databaseOptions(config));
  try {
    const applied = await migrateToLatest(database);
    if (applied.length > 0) logger.info({ migrations: applied }, 'applied migrations');
  } catch (err) {
    await database.close();
    await tracing?.shutdown();
    throw err;
  }

  // A node that crashed on a full disk starts all the same: its start-up writes wait for space.
  const storage = new StorageFullness();
  const postponed = new PostponedWrites(storage, logger);
  const notifier: Notifier = openNotifier(database, { listen: config.pgListen }, logger);
  if (notifier instanceof PostgresNotifier) await notifier.whenReady();
  const lifecycle = new AbortController();
  let listenUrl = config.publicUrl ?? `http://${config.host}:${config.port}`;
  const limiter = createPrincipalRateLimiter({ database, config, clock, logger });
  const metrics = createMetrics();
  const domainMetrics = new DomainMetrics(metrics);
  // Filled once the domains are built; the nodes answer, /readyz and /metrics report them.
  const workers = new Workers();
  // Its threads start on the first expression and stop with the app.
  const expressions = new ExpressionPool({
    workers: config.expressionWorkers,
    timeoutMs: config.expressionTimeoutMs,
    maxResultBytes: config.expressionMaxResultBytes,
    heapMb: config.expressionHeapMb,
  });
  const audit = createAuditDomain({ database, clock, config, logger });
  const platform: Platform = {
    config,
    database,
    clock,
    notifier,
    logger,
    publicUrl: () => config.publicUrl ?? listenUrl,
    shutdown: lifecycle.signal,
    limiter,
    metrics: domainMetrics,
    expressions,
    connections: new OpenConnections(),
    audit: audit.service,
  };

  // Every domain records its changes in the audit log and appends to the event log, so they come first; an agent reads the events of artifacts
  // shared with the groups an admin granted it (access groups), as it reads the artifacts.
  const accessGroups = createAccessGroups({ database, clock, audit: audit.service });
  const events = createEventsDomain({ platform, groups: accessGroups.service });
  const auth = createAuthDomain({
    database,
    clock,
    notifier,
    events: events.log,
    audit: audit.service,
    sessionTtlMs: config.sessionTtlSeconds * 1000,
    secureCookie: config.publicUrl?.startsWith('https:') ?? false,
    oidc: config.oidc,
    publicUrl: config.publicUrl,
  });
  await postponed.run('admin key', () => auth.service.ensureAdminKey(config.adminKey, config.dataDir, logger));

  const messaging = createMessagingDomain(platform, events.log);
  const discovery = createDiscoveryDomain({ platform, events: events.log, stats: messaging.inbox });
  const routines = createRoutinesDomain({ platform, inbox: messaging.inbox, events: events.log });
  const tasks = createTasksDomain({ platform, events: events.log, inbox: messaging.inbox });
  const coordination = createCoordinationDomain({
    platform,
    people: auth.users,
    events: events.log,
    inbox: messaging.inbox,
    directory: discovery.service,
    onPublish: (listener) => messaging.subscriptions.onPublish(listener),
    approvalLinkKey: await auth.service.sharedSecret(APPROVAL_LINK_SETTING),
  });
  const a2a = createA2aDomain({
    platform,
    inbox: messaging.inbox,
    discovery: discovery.service,
    version: VERSION,
  });
  // Who hears of what happened to the messages they sent, by their origin kind.
  messaging.inbox.limitAgentsBy(discovery.service);
  messaging.inbox.routeOutcomesTo({
    routine_execution: routines.outcomeHandler,
    plan_step: coordination.outcomeHandler,
    a2a_task: a2a.outcomeHandler,
  });
  const usage = createUsageDomain({ platform, events: events.log, inboxes: messaging.inbox });
  messaging.inbox.recordUsageWith(usage.service);
  messaging.inbox.holdPausedWith(usage.budgets);
  discovery.service.skipPausedWith(usage.budgets);
  coordination.pauseStepsWith(usage.budgets);
  discovery.service.scores.costsFrom(usage.service);
  coordination.service.runs.reportUsageWith(usage.service);
  const cluster = createClusterDomain({ platform, version: VERSION, workers });
  auth.service.confirmEndingsWith(cluster.service);
  const webhooks = createWebhooksDomain({ platform, events: events.log, feed: events.service });
  const notifications = createNotificationsDomain({ platform, targets: webhooks.service.targets, inbox: messaging.inbox });
  coordination.bindChannels(notifications.service);
  const alerts = createAlertsDomain({
    platform,
    channels: notifications.service,
    events: events.log,
    nodes: cluster.service,
    budgets: usage.budgets,
    inboxes: messaging.inbox,
  });
  const artifacts = createArtifactsDomain({
    platform,
    sharedSecret: (name) => auth.service.sharedSecret(name),
    groups: accessGroups.service,
    events: events.log,
    nodes: cluster.service,
  });
  messaging.useClaimChecks(artifacts.service.claimChecks);
  coordination.useClaimChecks(artifacts.service.claimChecks);

  // One worker deletes what every domain lets go of (the audit log keeps its own retention).
  const retention = createRetention({
    platform,
    nodes: cluster.service,
    rules: [
      ...authRetention(auth),
      ...messaging.retention,
      ...coordination.retention,
      ...routines.retention,
      ...events.retention,
      ...webhooks.retention,
      ...usage.retention,
      ...artifacts.retention,
    ],
    // PostgreSQL's statistics are the server's concern where autovacuum is off for them.
    upkeep: () => vacuumWhereAutovacuumWont(platform.database),
  });

  // Workers start after the server listens, in this order, and stop in reverse.
  workers.add(
    postponed.worker,
    ...cluster.workers,
    ...createAuthWorkers(auth, platform),
    ...messaging.workers,
    ...discovery.workers,
    ...routines.workers,
    ...coordination.workers,
    ...artifacts.workers,
    ...webhooks.workers,
    ...alerts.workers,
    ...retention.workers,
    ...audit.workers,
  );

  const mcpServices = {
    routines: routines.service,
    tasks: tasks.service,
    coordination: coordination.service,
    inbox: messaging.inbox,
    discovery: discovery.service,
    artifacts: artifacts.service,
  };
  domainMetrics.observe(metrics, {
    inboxes: () => messaging.inbox.depths(),
    agentsByHealth: () => discovery.service.countByHealth(),
    alertsFiring: () => alerts.service.firingCounts(),
    runsBlocked: () => coordination.service.runs.blockedCounts(),
    messagesHeld: () => messaging.inbox.heldByOrderingKey(),
  });
  if (database.writeStats) installWriteMetrics(metrics, database.writeStats);
  installWorkerMetrics(metrics, workers);
  const http = await buildHttpServer({
    config,
    logger,
    authenticator: httpAuthentication(auth.service, auth.sessions),
    limiter,
    anonymousLimiter: new FixedWindowRateLimiter(config.rateLimitAnonymous, config.rateWindowSeconds, () => clock.now()),
    metrics,
    tracing: tracing?.httpPlugin ?? null,
    readiness: {
      database: () => database.ping(),
      blobs: () => artifacts.blobs.check(),
      notices: () => notifier.transport,
      postponedWrites: () => postponed.names,
      failingWorkers: () => workers.failing(),
      tablesWithoutAutovacuum: () => tablesWithoutAutovacuum(database),
    },
    storage,
    audit: audit.service,
    routes: [
      { prefix: '/api/v1', plugin: auth.routes },
      { prefix: '/api/v1', plugin: accessGroups.routes },
      { prefix: '/api/v1', plugin: messaging.routes },
      { prefix: '/api/v1', plugin: messaging.channelRoutes(discovery.service) },
      { prefix: '/api/v1', plugin: discovery.routes },
      { prefix: '/core/api/v1', plugin: routines.routes },
      { prefix: '/core/api/v1', plugin: tasks.routes },
      {
        prefix: '/core/mcp',
        plugin: mcpRoutes(
          {
            tools: buildTools(mcpServices),
            interactive: [humanInputTool(coordination.service.decisions)],
            resources: buildResources(mcpServices),
            instructions,
          },
          logger,
          platform.connections,
          { perKey: config.mcpSessionsPerKey, idleMs: config.mcpSessionIdleSeconds * 1000 },
        ),
      },
      { prefix: '/api/v1', plugin: coordination.routes },
      { prefix: '/api/v1', plugin: artifacts.routes },
      { prefix: '/api/v1', plugin: events.routes },
      { prefix: '/api/v1', plugin: webhooks.routes },
      { prefix: '/api/v1', plugin: notifications.routes },
      { prefix: '/api/v1', plugin: alerts.routes },
      { prefix: '/api/v1', plugin: cluster.routes },
      { prefix: '/api/v1', plugin: audit.routes },
      { prefix: '/api/v1', plugin: usage.routes },
      { prefix: '/api/v1', plugin: usage.budgetRoutes },
      { prefix: '', plugin: a2a.routes },
    ],
  });

  let closing: Promise<void> | null = null;
  return {
    platform,
    http,
    retention: retention.service,
    async listen() {
      await http.listen({ host: config.host, port: config.port });
      const address = http.server.address() as AddressInfo;
      const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      listenUrl = `http://${host}:${address.port}`;
      await postponed.run('node registration', () => cluster.service.register());
      workers.start();
      logger.info({ url: listenUrl, storage: database.caps.kind }, 'switchboard listening');
      return listenUrl;
    },
    close() {
      closing ??= (async () => {
        lifecycle.abort();
        await http.close();
        await workers.stop();
        await expressions.close();
        // Down at once for the other nodes; a database out of reach leaves it to the 30 s rule.
        await cluster.service.stopped().catch((err: unknown) => logger.warn({ err }, 'could not mark this node down'));
        auth.close();
        await notifier.close();
        await database.close();
        await tracing?.shutdown().catch((err: unknown) => logger.warn({ err }, 'could not flush the last spans'));
      })();
      return closing;
    },
  };
}
