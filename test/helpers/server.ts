import { randomBytes } from 'node:crypto';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { DestinationStream } from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import type { Clock } from '../../src/kernel/clock.js';
import { Api } from './api.js';
import { createTestDatabase, type Dialect, type TestDatabase } from './database.js';

export interface TestServer {
  readonly app: App;
  readonly url: string;
  readonly database: TestDatabase;
  readonly adminKey: string;
  /** A client with the admin key. */
  readonly api: Api;
  /** Creates an agent key and returns a client that acts as that agent. */
  agent(agentId: string): Promise<Api>;
  /**
   * Resolves when the next request whose method is `method` and whose URL starts with
   * `urlPrefix` reaches its route handler (past auth and validation). Call it before sending.
   */
  requestArrival(method: string, urlPrefix: string): Promise<ArrivedRequest>;
  close(): Promise<void>;
}

/** A request the server is handling. */
export interface ArrivedRequest {
  /** Resolves when its handler has answered (even to a client that went away). */
  readonly answered: Promise<void>;
}

export interface StartOptions {
  /** Reuse a database (restart tests); a fresh one otherwise, dropped on close. */
  database?: TestDatabase;
  env?: Record<string, string>;
  clock?: Clock;
  adminKey?: string;
  /** Where the server's log lines go, at level debug (silent otherwise, unless SWITCHBOARD_TEST_LOG names a level). */
  logDestination?: DestinationStream;
  /** With OTEL_* tracing in `env`: where spans go instead of OTLP. */
  spanProcessor?: SpanProcessor;
  /** Runs between building the app and its listen (which registers the node and starts the workers). */
  beforeListen?: (app: App) => Promise<void>;
}

/** Starts the real app on 127.0.0.1 and a random port, on the given backend. */
export async function startServer(dialect: Dialect, options: StartOptions = {}): Promise<TestServer> {
  const database = options.database ?? (await createTestDatabase(dialect, { migrated: true }));
  const ownsDatabase = options.database === undefined;
  const adminKey = options.adminKey ?? `sk_test_${randomBytes(16).toString('hex')}`;
  const config = loadConfig({
    SWITCHBOARD_HOST: '127.0.0.1',
    SWITCHBOARD_PORT: '0',
    SWITCHBOARD_ADMIN_KEY: adminKey,
    SWITCHBOARD_LOG_LEVEL: process.env.SWITCHBOARD_TEST_LOG ?? 'silent',
    SWITCHBOARD_DATA_DIR: database.dataDir,
    // The tests' webhook receivers listen here; the guard refuses it unless named.
    SWITCHBOARD_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    ...database.env,
    ...options.env,
  });
  const app = await createApp({
    config,
    clock: options.clock,
    spanProcessor: options.spanProcessor,
    logger: options.logDestination ? createLogger({ ...config, logLevel: 'debug' }, options.logDestination) : createLogger(config),
  });
  const arrivals = new Set<{ method: string; urlPrefix: string; arrived: (request: ArrivedRequest) => void }>();
  // onSend runs once the handler answers, whether or not the client is still there to read it.
  const answered = new WeakMap<object, () => void>();
  app.http.addHook('preHandler', (request, _reply, done) => {
    for (const waiting of arrivals) {
      if (request.method !== waiting.method || !request.url.startsWith(waiting.urlPrefix)) continue;
      arrivals.delete(waiting);
      waiting.arrived({ answered: new Promise((resolve) => answered.set(request, resolve)) });
      break;
    }
    done();
  });
  app.http.addHook('onSend', (request, _reply, payload, done) => {
    answered.get(request)?.();
    done(null, payload);
  });
  await options.beforeListen?.(app);
  const url = await app.listen();
  const api = new Api(url, adminKey);
  return {
    app,
    url,
    database,
    adminKey,
    api,
    async agent(agentId: string) {
      const res = await api.post('/api/v1/auth/keys', { agent_id: agentId, role: 'agent', name: `test ${agentId}` });
      if (res.status !== 201) throw new Error(`could not create a key for ${agentId}: ${res.text}`);
      return api.withKey(res.body.data.key);
    },
    requestArrival(method: string, urlPrefix: string) {
      return new Promise((arrived) => arrivals.add({ method, urlPrefix, arrived }));
    },
    async close() {
      await app.close();
      if (ownsDatabase) await database.drop();
    },
  };
}

/**
 * Registers a server for the enclosing describe block: started in beforeAll, closed (and its
 * database dropped) in afterAll. Read its fields inside tests.
 */
export function useServer(dialect: Dialect, options: StartOptions = {}): TestServer {
  const holder = {} as { current?: TestServer };
  beforeAll(async () => {
    holder.current = await startServer(dialect, options);
  });
  afterAll(async () => {
    await holder.current?.close();
  });
  return new Proxy({} as TestServer, {
    get(_target, property) {
      if (!holder.current) throw new Error('the test server is not started yet (use it inside a test)');
      return Reflect.get(holder.current, property);
    },
  });
}
