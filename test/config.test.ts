import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

describe('config', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      dataDir: path.resolve('./data'),
      databaseUrl: null,
      adminKey: null,
      publicUrl: null,
      logLevel: 'info',
      logFormat: 'json',
      rateLimit: 6000,
      rateWindowSeconds: 60,
      sqliteGroupCommit: true,
      sqliteSynchronous: 'normal',
      messageRetentionDays: 7,
      deadLetterRetentionDays: 30,
      runRetentionDays: 30,
      retentionBatchSize: 1000,
      eventRetentionDays: 30,
      eventStreamsPerPrincipal: 10,
      eventKeepAliveMs: 15_000,
      eventLogEnabled: true,
      webhookDenyPrivate: true,
      webhookAllowedHosts: [],
      webhookTimeoutMs: 10_000,
      webhookPollMs: 5_000,
      smtpUrl: null,
      smtpFrom: 'Switchboard <switchboard@localhost>',
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads every variable', () => {
    const config = loadConfig({
      SWITCHBOARD_HOST: '0.0.0.0',
      SWITCHBOARD_PORT: '0',
      SWITCHBOARD_DATA_DIR: '/tmp/sb',
      DATABASE_URL: 'postgres://u@h/db',
      SWITCHBOARD_ADMIN_KEY: 'sk_0123456789abcdef',
      SWITCHBOARD_PUBLIC_URL: 'https://switchboard.example.com/',
      SWITCHBOARD_LOG_LEVEL: 'debug',
      SWITCHBOARD_LOG_FORMAT: 'pretty',
      SWITCHBOARD_RATE_LIMIT: '0',
      SWITCHBOARD_RATE_WINDOW_S: '1',
      SWITCHBOARD_SQLITE_GROUP_COMMIT: 'off',
      SWITCHBOARD_SQLITE_SYNCHRONOUS: 'full',
      SWITCHBOARD_EVENT_RETENTION_DAYS: '7',
      SWITCHBOARD_MESSAGE_RETENTION_DAYS: '2',
      SWITCHBOARD_DEAD_LETTER_RETENTION_DAYS: '14',
      SWITCHBOARD_RUN_RETENTION_DAYS: '90',
      SWITCHBOARD_RETENTION_BATCH_SIZE: '250',
      SWITCHBOARD_EVENT_STREAMS_PER_PRINCIPAL: '2',
      SWITCHBOARD_EVENT_KEEPALIVE_MS: '50',
      SWITCHBOARD_BENCH_EVENT_LOG: 'off',
      SWITCHBOARD_WEBHOOK_DENY_PRIVATE: 'false',
      SWITCHBOARD_WEBHOOK_ALLOWED_HOSTS: ' 127.0.0.1, 10.1.0.0/16,fd00::/8 ,hooks.internal,Receiver.Example. ',
      SWITCHBOARD_WEBHOOK_TIMEOUT_MS: '2000',
      SWITCHBOARD_WEBHOOK_POLL_MS: '100',
      SWITCHBOARD_SMTP_URL: 'smtps://alerts:pw@smtp.example.com:465',
      SWITCHBOARD_SMTP_FROM: 'Ops <ops@example.com>',
    });
    expect(config).toMatchObject({
      host: '0.0.0.0',
      port: 0,
      dataDir: '/tmp/sb',
      databaseUrl: 'postgres://u@h/db',
      adminKey: 'sk_0123456789abcdef',
      publicUrl: 'https://switchboard.example.com',
      logLevel: 'debug',
      logFormat: 'pretty',
      rateLimit: 0,
      rateWindowSeconds: 1,
      messageRetentionDays: 2,
      deadLetterRetentionDays: 14,
      runRetentionDays: 90,
      retentionBatchSize: 250,
      sqliteGroupCommit: false,
      sqliteSynchronous: 'full',
      eventRetentionDays: 7,
      eventStreamsPerPrincipal: 2,
      eventKeepAliveMs: 50,
      eventLogEnabled: false,
      webhookDenyPrivate: false,
      webhookAllowedHosts: ['127.0.0.1', '10.1.0.0/16', 'fd00::/8', 'hooks.internal', 'Receiver.Example.'],
      webhookTimeoutMs: 2000,
      webhookPollMs: 100,
      smtpUrl: 'smtps://alerts:pw@smtp.example.com:465',
      smtpFrom: 'Ops <ops@example.com>',
    });
  });

  it.each([
    ['SWITCHBOARD_PORT', '80a'],
    ['SWITCHBOARD_PORT', '70000'],
    ['DATABASE_URL', 'mysql://x'],
    ['SWITCHBOARD_LOG_LEVEL', 'loud'],
    ['SWITCHBOARD_PUBLIC_URL', 'ftp://x'],
    ['SWITCHBOARD_ADMIN_KEY', 'short'],
    ['SWITCHBOARD_RATE_WINDOW_S', '0'],
    ['SWITCHBOARD_SQLITE_GROUP_COMMIT', 'yes'],
    ['SWITCHBOARD_SQLITE_SYNCHRONOUS', 'extra'],
    ['SWITCHBOARD_LOG_FORMAT', 'xml'],
    ['SWITCHBOARD_EVENT_RETENTION_DAYS', '0'],
    ['SWITCHBOARD_MESSAGE_RETENTION_DAYS', '0'],
    ['SWITCHBOARD_DEAD_LETTER_RETENTION_DAYS', 'week'],
    ['SWITCHBOARD_RUN_RETENTION_DAYS', '36501'],
    ['SWITCHBOARD_RETENTION_BATCH_SIZE', '10001'],
    ['SWITCHBOARD_REPLAY_MAX_RUNS', '10001'],
    ['SWITCHBOARD_EVENT_STREAMS_PER_PRINCIPAL', '0'],
    ['SWITCHBOARD_EVENT_KEEPALIVE_MS', 'soon'],
    ['SWITCHBOARD_WEBHOOK_DENY_PRIVATE', 'yes'],
    ['SWITCHBOARD_WEBHOOK_ALLOWED_HOSTS', '10.0.0.0/33'],
    ['SWITCHBOARD_WEBHOOK_ALLOWED_HOSTS', 'fd00::/129'],
    ['SWITCHBOARD_WEBHOOK_ALLOWED_HOSTS', 'hooks.internal/8'],
    ['SWITCHBOARD_WEBHOOK_ALLOWED_HOSTS', '10.0.0.0/8/8'],
    ['SWITCHBOARD_WEBHOOK_ALLOWED_HOSTS', 'http://hooks.internal'],
    ['SWITCHBOARD_WEBHOOK_ALLOWED_HOSTS', '*.internal'],
    ['SWITCHBOARD_WEBHOOK_TIMEOUT_MS', '0'],
    ['SWITCHBOARD_WEBHOOK_POLL_MS', '5s'],
    ['SWITCHBOARD_TRUSTED_PROXIES', 'proxy.internal'],
    ['SWITCHBOARD_TRUSTED_PROXIES', '10.0.0.0/33'],
    ['SWITCHBOARD_TRUSTED_PROXIES', '10.0.0.1,fd00::/129'],
    ['SWITCHBOARD_TRUSTED_PROXIES', '10.0.0.0/8/1'],
    ['SWITCHBOARD_PG_PREPARE', 'yes'],
    ['SWITCHBOARD_SMTP_URL', 'smtp.example.com:587'],
    ['SWITCHBOARD_SMTP_URL', 'https://smtp.example.com'],
  ])('rejects %s=%s with a clear message', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });
});

it('reads trusted proxies as addresses and CIDR ranges', () => {
  expect(loadConfig({}).trustedProxies).toEqual([]);
  expect(loadConfig({ SWITCHBOARD_TRUSTED_PROXIES: ' 10.0.0.0/8, ::1 ,fd00::/8,' }).trustedProxies).toEqual([
    '10.0.0.0/8',
    '::1',
    'fd00::/8',
  ]);
});

it('prepares statements unless told not to, or unless LISTEN is off (PgBouncer in transaction mode) and PREPARE is not set', () => {
  const prepare = (env: Record<string, string>) => loadConfig(env).pgPrepare;
  expect(prepare({})).toBe(true);
  expect(prepare({ SWITCHBOARD_PG_PREPARE: 'off' })).toBe(false);
  expect(prepare({ SWITCHBOARD_PG_LISTEN: 'off' })).toBe(false);
  // A PgBouncer that tracks prepared statements (1.21+, max_prepared_statements) keeps them with LISTEN off.
  expect(prepare({ SWITCHBOARD_PG_LISTEN: 'off', SWITCHBOARD_PG_PREPARE: 'on' })).toBe(true);
  expect(loadConfig({ SWITCHBOARD_PG_LISTEN: 'off', SWITCHBOARD_PG_PREPARE: 'on' }).pgListen).toBe(false);
});

describe('OIDC sign-in configuration (SWITCHBOARD_OIDC_*)', () => {
  const issuer = { SWITCHBOARD_OIDC_ISSUER: 'https://id.example.com/realms/ops', SWITCHBOARD_OIDC_CLIENT_ID: 'switchboard' };

  it('is off without an issuer, and defaults the role to viewer and the name to the issuer host', () => {
    expect(loadConfig({}).oidc).toBeNull();
    expect(loadConfig(issuer).oidc).toEqual({
      ...{ issuer: issuer.SWITCHBOARD_OIDC_ISSUER, clientId: 'switchboard' },
      clientSecret: null,
      roleClaim: null,
      defaultRole: 'viewer',
      name: 'id.example.com',
    });
    const full = loadConfig({
      ...issuer,
      SWITCHBOARD_OIDC_CLIENT_SECRET: 's',
      SWITCHBOARD_OIDC_ROLE_CLAIM: 'groups',
      SWITCHBOARD_OIDC_DEFAULT_ROLE: 'approver',
      SWITCHBOARD_OIDC_NAME: 'Okta',
    });
    expect(full.oidc).toMatchObject({ clientSecret: 's', roleClaim: 'groups', defaultRole: 'approver', name: 'Okta' });
    expect(loadConfig({ ...issuer, SWITCHBOARD_OIDC_ISSUER: 'http://127.0.0.1:9000' }).oidc?.issuer).toBe('http://127.0.0.1:9000');
  });

  it.each([
    [{ SWITCHBOARD_OIDC_ISSUER: 'https://id.example.com' }, 'SWITCHBOARD_OIDC_CLIENT_ID'],
    [{ ...issuer, SWITCHBOARD_OIDC_ISSUER: 'http://id.example.com' }, 'SWITCHBOARD_OIDC_ISSUER'],
    [{ ...issuer, SWITCHBOARD_OIDC_ISSUER: 'not a url' }, 'SWITCHBOARD_OIDC_ISSUER'],
    [{ ...issuer, SWITCHBOARD_OIDC_DEFAULT_ROLE: 'agent' }, 'SWITCHBOARD_OIDC_DEFAULT_ROLE'],
  ])('rejects %o naming %s', (env, name) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(name);
  });
});

describe('tracing configuration (the standard OTEL_* variables)', () => {
  it('is off unless an exporter or an endpoint asks for it, and when disabled or none', () => {
    expect(loadConfig({}).tracing).toBeNull();
    expect(loadConfig({ OTEL_SERVICE_NAME: 'x' }).tracing).toBeNull();
    expect(loadConfig({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).tracing).toBeNull();
    expect(loadConfig({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' }).tracing).toBeNull();
  });

  it('reads the endpoint, headers, service name and sampler', () => {
    expect(loadConfig({ OTEL_TRACES_EXPORTER: 'otlp' }).tracing).toEqual({
      url: 'http://localhost:4318/v1/traces',
      protocol: 'http/protobuf',
      headers: {},
      serviceName: 'switchboard',
      sampleRatio: 1,
      parentBased: true,
    });
    expect(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector.example.com:4318/',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=abc,tenant=t1',
        OTEL_SERVICE_NAME: 'switchboard-eu',
        OTEL_TRACES_SAMPLER: 'traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      }).tracing,
    ).toEqual({
      url: 'https://collector.example.com:4318/v1/traces',
      protocol: 'http/json',
      headers: { 'x-api-key': 'abc', tenant: 't1' },
      serviceName: 'switchboard-eu',
      sampleRatio: 0.25,
      parentBased: false,
    });
    // The signal's own endpoint is the whole URL.
    expect(loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/custom' }).tracing?.url).toBe('http://c:4318/custom');
  });

  it.each([
    ['OTEL_TRACES_EXPORTER', 'jaeger'],
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc'],
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'thrift'],
    ['OTEL_TRACES_SAMPLER_ARG', '2'],
    ['OTEL_TRACES_SAMPLER', 'sometimes'],
  ])('refuses %s=%s with a clear message', (name, value) => {
    expect(() => loadConfig({ OTEL_TRACES_EXPORTER: 'otlp', ...{ [name]: value } })).toThrow(new RegExp(value === 'grpc' ? 'grpc' : name));
  });
});
