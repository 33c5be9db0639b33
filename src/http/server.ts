import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import websocket from '@fastify/websocket';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyPluginAsync,
  type FastifyPluginCallback,
} from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Config } from '../config.js';
import type { RateLimiter } from '../kernel/rate-limiter.js';
import type { StorageFullness } from '../db/faults.js';
import { AppError, Unauthorized } from '../kernel/errors.js';
import { serveConsole } from './console.js';
import { installAccessLog } from './access-log.js';
import { drainOnClose } from './drain.js';
import { answerClientError, answerFrameworkError, installErrorHandling } from './error-handler.js';
import { installUnstorableRefusal, MAX_JSON_DEPTH, nestsDeeperThan, tooDeepError } from './input-guards.js';
import { describeOperations, type DocumentedRoute } from './openapi.js';
import { errorAudit, installAuditScope, type RequestAudit } from './plugins/audit.js';
import type { Authenticator } from './authenticator.js';
import { SESSION_COOKIE } from './session-cookie.js';
import { compileSerializer } from './serialization.js';
import { installMetrics } from './plugins/metrics.js';
import { requestId } from './plugins/request-id.js';
import { lazyRequestLogger } from './request-logger.js';
import { withBoundedRequestIntegers } from './schemas.js';
import { installSecurityHeaders } from './security-headers.js';

export type HttpServer = FastifyInstance;

/** A route as the route table lists it: `permission` is null only on public routes. */
export interface RouteEntry extends DocumentedRoute {
  hidden: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    routeTable: RouteEntry[];
  }
}

export interface RouteGroup {
  /** `/api/v1` (main API) or `/core/api/v1` (routines and tasks). */
  prefix: string;
  plugin: FastifyPluginAsync;
}

export interface HttpServerOptions {
  config: Config;
  logger: Logger;
  /** Who calls (keys, signatures, the console's session cookie) and what each route lets them do. */
  authenticator: Authenticator;
  limiter: RateLimiter;
  /** Budgets per client address of requests without a principal. */
  anonymousLimiter: RateLimiter;
  metrics: Registry;
  /** The OpenTelemetry request-span plugin (tracing.ts), registered before any route; null without tracing. */
  tracing: FastifyPluginCallback | null;
  /** What GET /readyz reports: each dependency's state. */
  readiness: Readiness;
  /** Whether writes find storage full: set by the error handler, cleared by a write that succeeds. */
  storage: StorageFullness;
  /** Hears of denied requests and of changes that failed (the audit log). */
  audit: RequestAudit;
  routes: RouteGroup[];
}

export const API_VERSION = '0.1.0';

const HEADERS_TIMEOUT_MS = 30_000;
/** /readyz counts a dependency down when its check takes longer than this. */
const READY_TIMEOUT_MS = 2_000;

/** The dependencies GET /readyz looks at. */
export interface Readiness {
  /** Throws when the database cannot be reached. */
  database(): Promise<void>;
  /** Throws when contents cannot be stored. */
  blobs(): Promise<void>;
  /** How notices travel between nodes now (kernel/notifier.ts). */
  notices(): string;
  /** The start-up writes a full disk postponed, by name (db/postponed-writes.ts). */
  postponedWrites(): string[];
  /** The workers whose last passes all failed, by name (workers/workers.ts). */
  failingWorkers(): string[];
  /** The hot tables autovacuum skips (db/autovacuum.ts); null where there is no autovacuum (SQLite). */
  tablesWithoutAutovacuum(): Promise<string[] | null>;
}

/**
 * `up` when `check` resolves within READY_TIMEOUT_MS: a dependency that does not answer in 2 s is
 * as unready as one that refuses (probes time out on their own after a few seconds, and a pool
 * connect waits 5 s).
 */
async function answers(check: () => Promise<void>): Promise<'up' | 'down'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_resolve, reject) => (timer = setTimeout(() => reject(new Error('no answer within 2 s')), READY_TIMEOUT_MS))),
    ]);
    return 'up';
  } catch {
    return 'down';
  } finally {
    clearTimeout(timer);
  }
}

/** Why /readyz answers 507, for the operator: what still works, and what waits for space. */
function fullStorageReason(postponed: string[]): string {
  const waiting = postponed.length > 0 ? `; postponed until a write succeeds: ${postponed.join(', ')}` : '';
  return `No storage space is left for writes: reads are served, writes answer 507 insufficient_storage${waiting}`;
}

// Two validators: query strings and path params arrive as text and are coerced to the
// schema's types; JSON bodies are not (a number where a string belongs is a 400, never
// silently converted). Unknown fields are errors everywhere. JSON numbers are
// finite (`1e400` parses as Infinity); text ones coerced to Infinity pass ajv's finiteness
// check, and meet the maximum every integer has (withBoundedRequestIntegers). One pair for the
// process: Ajv keeps what it compiled by schema object, and the schemas are module constants, so
// another app in the process (the test suites start hundreds) compiles none again.
const validatorOptions = { removeAdditional: false, useDefaults: true, allErrors: true, strict: false } as const;
const bodyValidator = addFormats.default(new Ajv.default({ ...validatorOptions, coerceTypes: false, strictNumbers: true }));
const textValidator = addFormats.default(new Ajv.default({ ...validatorOptions, coerceTypes: 'array' }));

/** Builds the Fastify app: plumbing first, then every domain's routes under its root. */
export async function buildHttpServer(options: HttpServerOptions): Promise<FastifyInstance> {
  const requestTimeoutMs = options.config.requestTimeoutSeconds * 1000;
  const app = Fastify({
    loggerInstance: options.logger as FastifyBaseLogger,
    // Fastify's own two lines per request are replaced by one (access-log.ts).
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyRequestLogger,
    genReqId: requestId,
    requestIdHeader: false,
    bodyLimit: options.config.maxJsonBodyBytes,
    // A slow body is cut (408) and never holds its memory for long; headers get less time.
    // Node checks the deadlines every connectionsCheckingInterval: a tenth of the timeout, at
    // most Node's default of 30 s.
    requestTimeout: requestTimeoutMs,
    http: {
      headersTimeout: Math.min(HEADERS_TIMEOUT_MS, requestTimeoutMs),
      connectionsCheckingInterval: Math.min(30_000, requestTimeoutMs / 10),
    },
    return503OnClosing: true,
    // request.ip: X-Forwarded-For's nearest address not of a trusted proxy; without any, the socket's.
    trustProxy: options.config.trustedProxies.length > 0 ? [...options.config.trustedProxies] : false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    // Requests refused before routing, or before they could be parsed, get the envelope too.
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? bodyValidator : textValidator).compile(schema));
  app.setSerializerCompiler(compileSerializer);

  const parseJson = app.getDefaultJsonParser('error', 'remove');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const raw = body as Buffer;
    request.rawBody = raw;
    // An empty body with a JSON content type means "no body", as curl -X POST sends it.
    if (raw.length === 0) return done(null, undefined);
    if (nestsDeeperThan(raw, MAX_JSON_DEPTH)) return done(tooDeepError());
    parseJson(request, raw.toString('utf8'), done);
  });

  if (options.tracing) await app.register(options.tracing);
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-ID', request.id);
    done();
  });
  installSecurityHeaders(app);
  drainOnClose(app);
  const { storage } = options;
  app.addHook('onSend', (request, reply, payload, done) => {
    // A write answered with success shows there is room again (see StorageFullness).
    if (storage.full && reply.statusCode < 300 && request.method !== 'GET' && request.method !== 'HEAD') storage.markRoom();
    done(null, payload);
  });
  installErrorHandling(app, storage, errorAudit(options.audit, options.authenticator.actorOf));
  installMetrics(app, options.metrics);
  installAccessLog(app, options.logger, options.authenticator.actorOf);
  // WebSocket routes (the agent channel): a frame past twice the body limit ends the connection
  // with 1009, which ws sends itself (so the error is only logged); under it, the route answers
  // an oversized frame with an error frame. Before authentication: its hook marks upgrade requests,
  // whose sockets it ends after an HTTP answer (a 401 before the upgrade).
  await app.register(websocket, {
    options: { maxPayload: 2 * options.config.maxJsonBodyBytes },
    errorHandler: (err, _socket, request) => request.log.debug({ err }, 'websocket error'),
  });
  options.authenticator.install(app, {
    principals: options.limiter,
    anonymous: options.anonymousLimiter,
    bodyBytes: options.config.maxJsonBodyBytes,
    unauthenticatedBodyBytes: options.config.unauthenticatedBodyBytes,
  });
  installUnstorableRefusal(app);
  installAuditScope(app, options.audit, options.authenticator.actorOf);

  // Every route, for the OpenAPI completeness test and operators' introspection.
  const routes: RouteEntry[] = [];
  app.decorate('routeTable', routes);
  // Each route's options, read once every plugin's onRoute hook has run (the console's and the
  // docs' mark theirs public after this one).
  const declared: { entry: RouteEntry; options: { config?: { public?: boolean; permission?: string } } }[] = [];
  app.addHook('onRoute', (route) => {
    if (route.schema) route.schema = withBoundedRequestIntegers(route.schema);
    // Public routes (webhooks, upload URLs, signed downloads) say so in the document: no credentials.
    if (route.config?.public && route.schema && !route.schema.hide) route.schema = { ...route.schema, security: [] };
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method === 'HEAD') continue;
      const entry: RouteEntry = {
        method,
        url: route.url,
        hidden: Boolean(route.schema?.hide) || route.url.startsWith('/docs'),
        permission: null,
        conflict: route.config?.conflict ?? null,
        forbidden: route.config?.forbidden ?? null,
      };
      routes.push(entry);
      declared.push({ entry, options: route });
    }
  });
  // A route without a declared permission would be open to every key: refused at start.
  app.addHook('onReady', (done) => {
    for (const { entry, options } of declared.splice(0)) {
      if (options.config?.public) continue;
      const permission = options.config?.permission;
      if (permission === undefined)
        return done(new Error(`${entry.method} ${entry.url} declares no permission (config.permission) and is not public`));
      entry.permission = permission;
    }
    done();
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Switchboard',
        version: API_VERSION,
        description: 'Control plane for software agents: routines, tasks, discovery, messaging, coordination, artifacts.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [{ url: options.config.publicUrl ?? '/' }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'API key: Authorization: Bearer sk_…' },
          session: {
            type: 'apiKey',
            in: 'cookie',
            name: SESSION_COOKIE,
            description: 'The console session set by POST /api/v1/auth/sessions; requests that change state also send X-CSRF-Token',
          },
          agentSignature: {
            type: 'apiKey',
            in: 'header',
            name: 'X-Signature',
            description:
              'Ed25519 signature (base64) of METHOD\\nPATH_WITH_QUERY\\nX-Timestamp\\nhex(sha256(body)), with X-Agent-ID and X-Timestamp headers',
          },
        },
      },
      security: [{ bearer: [] }, { agentSignature: [] }, { session: [] }],
    },
    transformObject: (built) => ('openapiObject' in built ? describeOperations(built.openapiObject, routes) : built.swaggerObject),
  });

  await app.register(async (docs) => {
    docs.addHook('onRoute', (route) => {
      route.config = { ...(route.config ?? {}), public: true };
    });
    await docs.register(swaggerUi, { routePrefix: '/docs' });
  });

  // A browser opening the server lands on the console; to an API client the root is no resource.
  app.get('/', { config: { public: true }, schema: { hide: true } }, async (request, reply) => {
    if (request.headers.accept?.includes('text/html')) return reply.redirect('/console');
    const credentials = request.headers.authorization !== undefined || request.headers['x-signature'] !== undefined;
    if (!credentials) throw new Unauthorized('Missing credentials: send "Authorization: Bearer <API key>" or sign the request');
    throw new AppError('not_found', 'GET / is no API operation: the API is under /api/v1 and /core/api/v1 (see /api/v1/openapi.json)');
  });
  await serveConsole(app, options.config.consoleDir);
  app.get('/healthz', { config: { public: true, rateLimit: false }, schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { config: { public: true, rateLimit: false }, schema: { hide: true } }, async (_request, reply) => {
    const [database, blobs, unvacuumed] = await Promise.all([
      answers(options.readiness.database),
      answers(options.readiness.blobs),
      options.readiness.tablesWithoutAutovacuum().catch(() => null),
    ]);
    // A lost LISTEN connection leaves the node serving (it reconnects and rescans), and so does a
    // worker that keeps failing (the requests it does not serve are no reason to send them elsewhere):
    // both are shown, not fatal. Only names: the errors are on the admin's GET /api/v1/cluster/nodes.
    const failingWorkers = options.readiness.failingWorkers();
    const checks = {
      database,
      listen: options.readiness.notices(),
      blobs: storage.full ? 'full' : blobs,
      workers: failingWorkers.length > 0 ? 'failing' : 'up',
      // Shown, never unready either: tables bloat over days, not within a request.
      ...(unvacuumed === null ? {} : { autovacuum: unvacuumed.length > 0 ? 'off' : 'on' }),
    };
    const details = {
      ...(failingWorkers.length > 0 ? { failing_workers: failingWorkers } : {}),
      ...(unvacuumed !== null && unvacuumed.length > 0 ? { autovacuum_off: unvacuumed } : {}),
    };
    if (database === 'down' || blobs === 'down') return reply.code(503).send({ status: 'unavailable', checks, ...details });
    if (storage.full)
      return reply
        .code(507)
        .send({ status: 'insufficient_storage', reason: fullStorageReason(options.readiness.postponedWrites()), checks, ...details });
    return { status: 'ready', checks, ...details };
  });
  app.get('/metrics', { config: { permission: 'metrics:read' }, schema: { hide: true } }, async (_request, reply) => {
    return reply.type(options.metrics.contentType).send(await options.metrics.metrics());
  });
  app.get('/api/v1/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());

  for (const group of options.routes) await app.register(group.plugin, { prefix: group.prefix });
  return app;
}
