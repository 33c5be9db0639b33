import { isIP } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The whole configuration, read once from the environment, validated and frozen.
 * Nothing else in the codebase reads process.env.
 */
export interface Config {
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  readonly databaseUrl: string | null;
  readonly adminKey: string | null;
  readonly publicUrl: string | null;
  readonly logLevel: string;
  /** `json` (one object per line) or `pretty` (for a terminal). */
  readonly logFormat: 'json' | 'pretty';
  readonly rateLimit: number;
  readonly rateWindowSeconds: number;
  /** Budget per client address of requests without a principal (public routes, refused credentials). */
  readonly rateLimitAnonymous: number;
  /**
   * Addresses and CIDR ranges of the proxies in front of the server: a request from one of them
   * has its client address taken from `X-Forwarded-For`. Empty: the header is ignored.
   */
  readonly trustedProxies: readonly string[];
  /** The most bytes the bodies of signed requests awaiting verification may hold together. */
  readonly unauthenticatedBodyBytes: number;
  /** Time to receive a whole request, body included; slower ones are cut with 408. */
  readonly requestTimeoutSeconds: number;
  readonly healthTtlSeconds: number;
  readonly maxUploadBytes: number;
  /** Artifact contents of at most this many bytes are kept in the database, not as files. */
  readonly artifactInlineBytes: number;
  readonly maxJsonBodyBytes: number;
  /** Message payloads, ack outputs and step inputs/outputs larger than this travel as an artifact reference. */
  readonly inlinePayloadBytes: number;
  readonly llmUrl: string | null;
  readonly llmModel: string | null;
  readonly embeddingsModel: string | null;
  readonly llmApiKey: string | null;
  /** The built console (index.html and assets/), served at /console. */
  readonly consoleDir: string;
  /** SQLite: the writes of one event-loop turn share one commit (db/sqlite-driver.ts); off: each commits alone. */
  readonly sqliteGroupCommit: boolean;
  /** SQLite's `PRAGMA synchronous`: `full` adds an fsync to every commit (README, Configuration). */
  readonly sqliteSynchronous: 'normal' | 'full';
  /** Events older than this are deleted by the retention sweep. */
  readonly eventRetentionDays: number;
  /** Finished messages (acknowledged, delivered at most once, cancelled) are deleted this long after they were sent. */
  readonly messageRetentionDays: number;
  /** Dead letters (and redriven ones) are deleted this long after they died. */
  readonly deadLetterRetentionDays: number;
  /** Finished runs (with steps and timelines), routine executions and fires are deleted this long after they ended; a plan may say otherwise. */
  readonly runRetentionDays: number;
  /** Rows one retention statement deletes at most. */
  readonly retentionBatchSize: number;
  /** Runs one bulk replay call takes at most (the rest are reported as truncated). */
  readonly replayMaxRuns: number;
  /** Audit log entries older than this are trimmed from the oldest end (the chain keeps its anchor). */
  readonly auditRetentionDays: number;
  /** Denials of one principal (or client address) and operation within this window become one audit entry with a count. */
  readonly auditDenialWindowMs: number;
  /** Event streams (SSE) one principal may hold open on a node; one more is refused with 429. */
  readonly eventStreamsPerPrincipal: number;
  /** MCP sessions (2025 revisions) one API key or signing agent may hold on a node; a new one evicts its least recently used. */
  readonly mcpSessionsPerKey: number;
  /** An MCP session not used for this long is closed. */
  readonly mcpSessionIdleSeconds: number;
  /** A console session not used for this long expires (sliding: each use moves its expiry). */
  readonly sessionTtlSeconds: number;
  /** OIDC sign-in for the console; null: not configured. */
  readonly oidc: OidcConfig | null;
  /** An event stream sends a `: keep-alive` comment after this long without an event. */
  readonly eventKeepAliveMs: number;
  /**
   * A WebSocket, event stream or A2A stream whose client has not read what it was sent for this
   * long is ended (a WebSocket with 1008), so a client that stops reading holds bounded memory.
   */
  readonly stalledClientMs: number;
  /**
   * False only for benchmarks (SWITCHBOARD_BENCH_EVENT_LOG=off), which measure what the log
   * costs: nothing is appended, so streams, the audit trail and webhooks see nothing.
   */
  readonly eventLogEnabled: boolean;
  /**
   * Refuse webhook receivers at addresses that are not globally reachable (loopback, private,
   * link-local, multicast…, also when an IPv6 address embeds one) unless the allow list names them.
   */
  readonly webhookDenyPrivate: boolean;
  /** Internal webhook receivers delivered to all the same: IP addresses, CIDR ranges, exact host names. */
  readonly webhookAllowedHosts: readonly string[];
  /** One webhook delivery attempt (connect, answer, the first 4 KiB of its body) fails after this long. */
  readonly webhookTimeoutMs: number;
  /**
   * False only for benchmarks (SWITCHBOARD_BENCH_SHARED_RATE_LIMIT=off), which compare the
   * cluster-wide budgets with node-local ones on PostgreSQL.
   */
  readonly sharedRateLimit: boolean;
  /**
   * PostgreSQL: wake other nodes through LISTEN/NOTIFY (true) or through notices polled every
   * 250 ms from a table (false: SWITCHBOARD_PG_LISTEN=off, for PgBouncer in transaction mode).
   */
  readonly pgListen: boolean;
  /**
   * PostgreSQL: run hot statements as named prepared statements (SWITCHBOARD_PG_PREPARE). Off
   * by default when SWITCHBOARD_PG_LISTEN=off: PgBouncer in transaction mode (before 1.21, or
   * without max_prepared_statements) may run a statement on a connection that never prepared it.
   */
  readonly pgPrepare: boolean;
  /** The webhook workers look for new events and due retries at least this often (notifications wake them sooner). */
  readonly webhookPollMs: number;
  /** How often the alert rules are evaluated (SWITCHBOARD_ALERT_INTERVAL_MS): a condition fires within about this long. */
  readonly alertIntervalMs: number;
  /** Where email notification channels send (smtp:// or smtps://, credentials in the URL); null: email channels are refused. */
  readonly smtpUrl: string | null;
  /** The From of notification emails. */
  readonly smtpFrom: string;
  /** OpenTelemetry traces: null (the default) loads no SDK at all. */
  readonly tracing: TracingConfig | null;
  /** Worker threads that evaluate JSONata (plans' transforms and conditions, triggers' filters). */
  readonly expressionWorkers: number;
  /** One expression's evaluation fails past this long (its thread is ended). */
  readonly expressionTimeoutMs: number;
  /** An expression whose result, as JSON, is larger fails. */
  readonly expressionMaxResultBytes: number;
  /** The heap of each expression thread; an expression that needs more fails. */
  readonly expressionHeapMb: number;
}

/** Where spans go and which are kept, from the standard OTEL_* variables. */
export interface TracingConfig {
  /** OTLP over HTTP: the collector's traces URL, e.g. http://127.0.0.1:4318/v1/traces. */
  readonly url: string;
  /** The OTLP/HTTP encoding: protobuf (the OTel default, and cheaper to encode) or JSON. */
  readonly protocol: 'http/protobuf' | 'http/json';
  /** OTEL_EXPORTER_OTLP_HEADERS / OTEL_EXPORTER_OTLP_TRACES_HEADERS (`key=value,…`). */
  readonly headers: Readonly<Record<string, string>>;
  readonly serviceName: string;
  /** Share of new traces recorded (OTEL_TRACES_SAMPLER *traceidratio); a recorded parent is always followed unless `parentBased` is false. */
  readonly sampleRatio: number;
  readonly parentBased: boolean;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be an integer, got '${raw}'`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function str(env: Env, name: string): string | null {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? null : raw.trim();
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const value = str(env, name) ?? fallback;
  if (!(values as readonly string[]).includes(value)) throw new ConfigError(`${name} must be one of ${values.join(', ')}, got '${value}'`);
  return value as T;
}

const HOST_NAME = /^(?=.{1,253}\.?$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i;

/** A comma-separated list of IP addresses and CIDR ranges (`10.1.0.0/16`, `fd00::/8`), and host names when `hostNames`. */
function networkList(env: Env, name: string, hostNames: boolean): string[] {
  const entries = (str(env, name) ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const entry of entries) {
    const [network, prefix, extra] = entry.split('/');
    const family = isIP(network!);
    const validPrefix = prefix === undefined || (/^\d{1,3}$/.test(prefix) && family !== 0 && Number(prefix) <= (family === 4 ? 32 : 128));
    const hostName = hostNames && family === 0 && prefix === undefined && HOST_NAME.test(entry);
    if (extra !== undefined || !validPrefix || (family === 0 && !hostName)) {
      const kinds = hostNames ? 'IP addresses, CIDR ranges (10.1.0.0/16) or host names' : 'IP addresses or CIDR ranges (10.1.0.0/16)';
      throw new ConfigError(`${name} must list ${kinds} separated by commas, got '${entry}'`);
    }
  }
  return entries;
}

const SAMPLERS = [
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
  'always_on',
  'always_off',
  'traceidratio',
] as const;

function headerList(raw: string | null, name: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const part of (raw ?? '').split(',')) {
    if (part.trim() === '') continue;
    const at = part.indexOf('=');
    if (at <= 0) throw new ConfigError(`${name} must be a list of key=value pairs separated by commas`);
    headers[decodeURIComponent(part.slice(0, at).trim())] = decodeURIComponent(part.slice(at + 1).trim());
  }
  return headers;
}

/**
 * The standard OTEL_* variables (the subset an OTLP/HTTP tracer needs). Off unless
 * OTEL_TRACES_EXPORTER=otlp or an OTLP endpoint is set; OTEL_SDK_DISABLED=true or
 * OTEL_TRACES_EXPORTER=none turns it off whatever else is set.
 */
function tracingConfig(env: Env): TracingConfig | null {
  if (str(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return null;
  const exporter = str(env, 'OTEL_TRACES_EXPORTER');
  const tracesEndpoint = str(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const endpoint = str(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (exporter === 'none' || (exporter === null && tracesEndpoint === null && endpoint === null)) return null;
  if (exporter !== null && exporter !== 'otlp') throw new ConfigError(`OTEL_TRACES_EXPORTER must be otlp or none, got '${exporter}'`);
  const protocol = str(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? str(env, 'OTEL_EXPORTER_OTLP_PROTOCOL') ?? 'http/protobuf';
  if (protocol === 'grpc')
    throw new ConfigError('OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported: Switchboard sends OTLP over HTTP (port 4318)');
  if (protocol !== 'http/protobuf' && protocol !== 'http/json')
    throw new ConfigError(`OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json, got '${protocol}'`);
  // The signal-specific endpoint is the whole URL; the general one is a base that /v1/traces extends.
  const url = tracesEndpoint ?? `${(endpoint ?? 'http://localhost:4318').replace(/\/+$/, '')}/v1/traces`;
  if (!/^https?:\/\//.test(url)) throw new ConfigError('OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL');
  const sampler = oneOf(env, 'OTEL_TRACES_SAMPLER', SAMPLERS, 'parentbased_always_on');
  const arg = str(env, 'OTEL_TRACES_SAMPLER_ARG');
  const ratio = arg === null ? 1 : Number(arg);
  if (!(ratio >= 0 && ratio <= 1)) throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG must be a number between 0 and 1, got '${arg}'`);
  return {
    url,
    protocol,
    headers: {
      ...headerList(str(env, 'OTEL_EXPORTER_OTLP_HEADERS'), 'OTEL_EXPORTER_OTLP_HEADERS'),
      ...headerList(str(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'), 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'),
    },
    serviceName: str(env, 'OTEL_SERVICE_NAME') ?? 'switchboard',
    sampleRatio: sampler.endsWith('always_off') ? 0 : sampler.endsWith('traceidratio') ? ratio : 1,
    parentBased: sampler.startsWith('parentbased_'),
  };
}

/** The roles OIDC may give a person (any but agent's). */
const PERSON_ROLES = ['viewer', 'approver', 'operator', 'admin'] as const;

export interface OidcConfig {
  /** The provider's issuer URL; its discovery document is read at the first sign-in. */
  readonly issuer: string;
  readonly clientId: string;
  /** Null: a public client (PKCE alone). */
  readonly clientSecret: string | null;
  /** The claim whose value (a role name, or a list of them: the highest wins) gives a user's role; null: the default role. */
  readonly roleClaim: string | null;
  readonly defaultRole: (typeof PERSON_ROLES)[number];
  /** What the sign-in page calls the provider ("Sign in with …"). */
  readonly name: string;
}

/**
 * SWITCHBOARD_OIDC_*: an https issuer (plain http only on a loopback address, for a provider
 * on the same machine) and a client id; the rest optional.
 */
function oidcConfig(env: Env): OidcConfig | null {
  const issuer = str(env, 'SWITCHBOARD_OIDC_ISSUER');
  if (issuer === null) return null;
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new ConfigError('SWITCHBOARD_OIDC_ISSUER must be a URL');
  }
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw new ConfigError('SWITCHBOARD_OIDC_ISSUER must be an https URL (http only on localhost)');
  }
  const clientId = str(env, 'SWITCHBOARD_OIDC_CLIENT_ID');
  if (clientId === null) throw new ConfigError('SWITCHBOARD_OIDC_CLIENT_ID is required with SWITCHBOARD_OIDC_ISSUER');
  return {
    issuer,
    clientId,
    clientSecret: str(env, 'SWITCHBOARD_OIDC_CLIENT_SECRET'),
    roleClaim: str(env, 'SWITCHBOARD_OIDC_ROLE_CLAIM'),
    defaultRole: oneOf(env, 'SWITCHBOARD_OIDC_DEFAULT_ROLE', PERSON_ROLES, 'viewer'),
    name: str(env, 'SWITCHBOARD_OIDC_NAME') ?? url.host,
  };
}

export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const databaseUrl = str(env, 'DATABASE_URL');
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must start with postgres:// or postgresql://');
  }
  const logLevel = oneOf(env, 'SWITCHBOARD_LOG_LEVEL', LOG_LEVELS, 'info');
  const publicUrl = str(env, 'SWITCHBOARD_PUBLIC_URL');
  if (publicUrl !== null && !/^https?:\/\//.test(publicUrl)) {
    throw new ConfigError('SWITCHBOARD_PUBLIC_URL must be an http(s) URL');
  }
  const smtpUrl = str(env, 'SWITCHBOARD_SMTP_URL');
  if (smtpUrl !== null && !/^smtps?:\/\//.test(smtpUrl)) throw new ConfigError('SWITCHBOARD_SMTP_URL must be an smtp:// or smtps:// URL');
  const adminKey = str(env, 'SWITCHBOARD_ADMIN_KEY');
  if (adminKey !== null && adminKey.length < 16) throw new ConfigError('SWITCHBOARD_ADMIN_KEY must be at least 16 characters');
  const pgListen = oneOf(env, 'SWITCHBOARD_PG_LISTEN', ['on', 'off'], 'on');
  const config: Config = {
    host: str(env, 'SWITCHBOARD_HOST') ?? '127.0.0.1',
    port: int(env, 'SWITCHBOARD_PORT', 8080, 0, 65535),
    dataDir: path.resolve(str(env, 'SWITCHBOARD_DATA_DIR') ?? './data'),
    databaseUrl,
    adminKey,
    publicUrl: publicUrl?.replace(/\/+$/, '') ?? null,
    logLevel,
    logFormat: oneOf(env, 'SWITCHBOARD_LOG_FORMAT', ['json', 'pretty'], 'json'),
    rateLimit: int(env, 'SWITCHBOARD_RATE_LIMIT', 6000, 0, 1_000_000_000),
    rateWindowSeconds: int(env, 'SWITCHBOARD_RATE_WINDOW_S', 60, 1, 86_400),
    rateLimitAnonymous: int(env, 'SWITCHBOARD_RATE_LIMIT_ANONYMOUS', 600, 0, 1_000_000_000),
    trustedProxies: networkList(env, 'SWITCHBOARD_TRUSTED_PROXIES', false),
    unauthenticatedBodyBytes: int(env, 'SWITCHBOARD_UNAUTHENTICATED_BODY_BYTES', 32 * 1024 ** 2, 1024, 1024 ** 4),
    // Node's own default, which Fastify turns off; it bounds uploads too.
    requestTimeoutSeconds: int(env, 'SWITCHBOARD_REQUEST_TIMEOUT_S', 300, 1, 86_400),
    healthTtlSeconds: int(env, 'SWITCHBOARD_HEALTH_TTL_S', 30, 1, 86_400),
    maxUploadBytes: int(env, 'SWITCHBOARD_MAX_UPLOAD_BYTES', 5 * 1024 ** 3, 1, Number.MAX_SAFE_INTEGER),
    // Each upload in flight holds up to this much in memory before it spills to a staging file.
    artifactInlineBytes: int(env, 'SWITCHBOARD_ARTIFACT_INLINE_BYTES', 64 * 1024, 0, 16 * 1024 ** 2),
    maxJsonBodyBytes: int(env, 'SWITCHBOARD_MAX_JSON_BYTES', 1024 * 1024, 1024, 1024 ** 3),
    inlinePayloadBytes: int(env, 'SWITCHBOARD_INLINE_PAYLOAD_BYTES', 256 * 1024, 1024, 1024 ** 3),
    llmUrl: str(env, 'SWITCHBOARD_LLM_URL')?.replace(/\/+$/, '') ?? null,
    llmModel: str(env, 'SWITCHBOARD_LLM_MODEL'),
    embeddingsModel: str(env, 'SWITCHBOARD_EMBEDDINGS_MODEL'),
    llmApiKey: str(env, 'SWITCHBOARD_LLM_API_KEY'),
    // Where `npm run build` puts it: dist/console of the package, seen from src/ and dist/ alike.
    consoleDir: path.resolve(str(env, 'SWITCHBOARD_CONSOLE_DIR') ?? fileURLToPath(new URL('../dist/console', import.meta.url))),
    sqliteGroupCommit: oneOf(env, 'SWITCHBOARD_SQLITE_GROUP_COMMIT', ['on', 'off'], 'on') === 'on',
    sqliteSynchronous: oneOf(env, 'SWITCHBOARD_SQLITE_SYNCHRONOUS', ['normal', 'full'], 'normal'),
    eventRetentionDays: int(env, 'SWITCHBOARD_EVENT_RETENTION_DAYS', 30, 1, 36_500),
    messageRetentionDays: int(env, 'SWITCHBOARD_MESSAGE_RETENTION_DAYS', 7, 1, 36_500),
    deadLetterRetentionDays: int(env, 'SWITCHBOARD_DEAD_LETTER_RETENTION_DAYS', 30, 1, 36_500),
    runRetentionDays: int(env, 'SWITCHBOARD_RUN_RETENTION_DAYS', 30, 1, 36_500),
    retentionBatchSize: int(env, 'SWITCHBOARD_RETENTION_BATCH_SIZE', 1000, 1, 10_000),
    replayMaxRuns: int(env, 'SWITCHBOARD_REPLAY_MAX_RUNS', 10_000, 1, 10_000),
    auditRetentionDays: int(env, 'SWITCHBOARD_AUDIT_RETENTION_DAYS', 365, 1, 36_500),
    auditDenialWindowMs: int(env, 'SWITCHBOARD_AUDIT_DENIAL_WINDOW_MS', 60_000, 10, 3_600_000),
    eventStreamsPerPrincipal: int(env, 'SWITCHBOARD_EVENT_STREAMS_PER_PRINCIPAL', 10, 1, 10_000),
    // Each session holds an MCP server of its own (3,000 sessions of one key took 112 MB).
    mcpSessionsPerKey: int(env, 'SWITCHBOARD_MCP_SESSIONS_PER_KEY', 16, 1, 10_000),
    mcpSessionIdleSeconds: int(env, 'SWITCHBOARD_MCP_SESSION_IDLE_S', 600, 10, 86_400),
    sessionTtlSeconds: int(env, 'SWITCHBOARD_SESSION_TTL_S', 43_200, 60, 30 * 86_400),
    oidc: oidcConfig(env),
    // Below the 30-60 s idle timeouts of common proxies and load balancers.
    eventKeepAliveMs: int(env, 'SWITCHBOARD_EVENT_KEEPALIVE_MS', 15_000, 10, 3_600_000),
    stalledClientMs: int(env, 'SWITCHBOARD_STALLED_CLIENT_MS', 30_000, 100, 3_600_000),
    eventLogEnabled: oneOf(env, 'SWITCHBOARD_BENCH_EVENT_LOG', ['on', 'off'], 'on') === 'on',
    // On by default: with it off, an admin reads the first 4 KiB of any internal service's answer in the delivery log.
    webhookDenyPrivate: oneOf(env, 'SWITCHBOARD_WEBHOOK_DENY_PRIVATE', ['true', 'false'], 'true') === 'true',
    webhookAllowedHosts: networkList(env, 'SWITCHBOARD_WEBHOOK_ALLOWED_HOSTS', true),
    webhookTimeoutMs: int(env, 'SWITCHBOARD_WEBHOOK_TIMEOUT_MS', 10_000, 10, 600_000),
    webhookPollMs: int(env, 'SWITCHBOARD_WEBHOOK_POLL_MS', 5_000, 10, 3_600_000),
    alertIntervalMs: int(env, 'SWITCHBOARD_ALERT_INTERVAL_MS', 5_000, 10, 600_000),
    smtpUrl,
    smtpFrom: str(env, 'SWITCHBOARD_SMTP_FROM') ?? 'Switchboard <switchboard@localhost>',
    tracing: tracingConfig(env),
    sharedRateLimit: oneOf(env, 'SWITCHBOARD_BENCH_SHARED_RATE_LIMIT', ['on', 'off'], 'on') === 'on',
    pgListen: pgListen === 'on',
    // Follows LISTEN unless set: whoever turned LISTEN off for PgBouncer keeps prepared statements off.
    pgPrepare: oneOf(env, 'SWITCHBOARD_PG_PREPARE', ['on', 'off'], pgListen) === 'on',
    expressionWorkers: int(env, 'SWITCHBOARD_EXPRESSION_WORKERS', 2, 1, 64),
    expressionTimeoutMs: int(env, 'SWITCHBOARD_EXPRESSION_TIMEOUT_MS', 1000, 10, 600_000),
    // As large as the JSON body an agent may send: a transform's output is stored like an agent's.
    expressionMaxResultBytes: int(env, 'SWITCHBOARD_EXPRESSION_MAX_RESULT_BYTES', 1024 * 1024, 1024, 1024 ** 3),
    expressionHeapMb: int(env, 'SWITCHBOARD_EXPRESSION_HEAP_MB', 128, 16, 16_384),
    ...overrides,
  };
  return Object.freeze(config);
}
