import { existsSync } from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, NotFound } from '../kernel/errors.js';

const PREFIX = '/console';
// Vite names every asset after a hash of its content: a new build gets new names, so a browser may keep one forever.
const IMMUTABLE = 'public, max-age=31536000, immutable';

/**
 * The console at /console: the single-page app built into `dir` by `npm run build`,
 * without credentials (it signs in with an API key and calls the API like any client). Assets
 * are cached for good, index.html is revalidated every time so a new build is picked up, and
 * every other path under /console is the app's own route (a deep link): index.html. Without a
 * build (tests that did not build, a checkout without `npm install`) /console answers 404 in
 * the envelope.
 */
export async function serveConsole(app: FastifyInstance, dir: string): Promise<void> {
  await app.register(async (scope) => {
    scope.addHook('onRoute', (route) => {
      route.config = { ...(route.config ?? {}), public: true };
    });
    const built = existsSync(path.join(dir, 'index.html'));
    if (!built) {
      const missing = async () => {
        throw new AppError('not_found', 'The console is not built on this server: run `npm run build`, then restart it');
      };
      scope.get(PREFIX, { schema: { hide: true } }, missing);
      scope.get(`${PREFIX}/*`, { schema: { hide: true } }, missing);
      return;
    }
    // One route per built file (wildcard: false), so that the catch-all below sees only app routes.
    await scope.register(fastifyStatic, {
      root: dir,
      prefix: `${PREFIX}/`,
      wildcard: false,
      index: false,
      cacheControl: false,
      setHeaders: (res, file) => res.setHeader('Cache-Control', file.startsWith(path.join(dir, 'assets')) ? IMMUTABLE : 'no-cache'),
    });
    const page = (request: FastifyRequest, reply: FastifyReply) => {
      // A missing asset (an old page asking for the previous build's file) is not the app.
      if (request.url.startsWith(`${PREFIX}/assets/`)) throw new NotFound('Console asset', request.url);
      return reply.sendFile('index.html');
    };
    scope.get(PREFIX, { schema: { hide: true } }, page);
    scope.get(`${PREFIX}/*`, { schema: { hide: true } }, page);
  });
}
