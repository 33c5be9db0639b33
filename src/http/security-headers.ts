import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** A page's directives: each policy below starts from these and changes what it needs. */
const PAGE_DIRECTIVES: Readonly<Record<string, string>> = {
  'default-src': "'self'",
  'script-src': "'self'",
  'style-src': "'self'",
  'img-src': "'self' blob: data:",
  'connect-src': "'self'",
  'object-src': "'none'",
  'base-uri': "'none'",
  'form-action': "'self'",
  'frame-ancestors': "'none'",
};

function pagePolicy(changes: Record<string, string> = {}): string {
  return Object.entries({ ...PAGE_DIRECTIVES, ...changes })
    .map(([directive, sources]) => `${directive} ${sources}`)
    .join('; ');
}

/**
 * The console: its own scripts only (Vite emits no inline script), its own styles (React sets
 * inline styles through the CSSOM, which style-src does not govern), images from the API's bytes
 * (blob:) and the empty favicon (data:), requests to the API on the same origin, and no framing.
 */
const CONSOLE_POLICY = pagePolicy();

/**
 * Swagger UI at /docs: its bundle and initializer are files (no inline script); the bundle writes
 * <style> elements of its own (hence inline styles, which run no code); its SVG icons are data:
 * images; "Try it out" calls the API on the same origin.
 */
const DOCS_POLICY = pagePolicy({ 'style-src': "'self' 'unsafe-inline'", 'img-src': "'self' data:" });

/**
 * Everything else (the API, artifact downloads, signed download URLs, webhooks) is data, never a
 * page: opened in a tab, an uploaded SVG or HTML file runs sandboxed in an origin of its own, with
 * no script, and cannot read what the console keeps on this origin.
 */
const DATA_POLICY = "default-src 'none'; frame-ancestors 'none'; sandbox";

const NOSNIFF = { 'X-Content-Type-Options': 'nosniff' };

/** The headers of data responses, also for answers written before any route is known. */
export const DATA_HEADERS: Readonly<Record<string, string>> = { ...NOSNIFF, 'Content-Security-Policy': DATA_POLICY };

const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  ...NOSNIFF,
  'Content-Security-Policy': CONSOLE_POLICY,
  // Approval links carry their token in the path (/console/approve/{token}); the console is one
  // document, so the whole of it sends no Referer that could take a token to another site.
  'Referrer-Policy': 'no-referrer',
};

const DOCS_HEADERS: Readonly<Record<string, string>> = { ...NOSNIFF, 'Content-Security-Policy': DOCS_POLICY };

/** The headers a response to `url` carries, by area: the console, the docs, or data. */
export function securityHeadersFor(url: string): Readonly<Record<string, string>> {
  const path = url.split('?', 1)[0]!;
  if (isUnder(path, '/console')) return CONSOLE_HEADERS;
  if (isUnder(path, '/docs')) return DOCS_HEADERS;
  return DATA_HEADERS;
}

function isUnder(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`);
}

/**
 * Takes over the response (`reply.hijack()`) with the area's headers on the raw response, where
 * the route's own writeHead picks them up: a hijacked answer (MCP, A2A streams) skips the headers
 * Fastify holds.
 */
export function hijackWithSecurityHeaders(request: FastifyRequest, reply: FastifyReply): void {
  reply.hijack();
  for (const [name, value] of Object.entries(securityHeadersFor(request.url))) reply.raw.setHeader(name, value);
}

/**
 * The browser security headers of every response, in one place. Held by Fastify with the route's
 * own headers (one writeHead with all of them; headers set on the raw response first make Node
 * validate and merge each of Fastify's one by one: 7% of an authenticated read's CPU, measured). A
 * route may still replace one with reply.header; routes that hijack use hijackWithSecurityHeaders.
 */
export function installSecurityHeaders(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(securityHeadersFor(request.url));
    done();
  });
}
