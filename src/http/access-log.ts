import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { ActorOf } from './plugins/audit.js';

/** A request that took this long is logged at info even when it succeeded. */
const SLOW_MS = 1000;

/**
 * One line per answered request: what was asked (the route pattern, so no ids or query strings
 * with secrets in them), the answer, its time and who asked, from where; never headers or bodies, where keys
 * and signatures travel. Refused, failed and slow requests at `info`, the rest at `debug`: a line
 * for every request cost 8–15% of the authenticated read's req/s (bench/RESULTS.md, foundation).
 */
export function installAccessLog(app: FastifyInstance, logger: Logger, actorOf: ActorOf): void {
  app.addHook('onResponse', (request, reply, done) => {
    const level = reply.statusCode >= 400 || reply.elapsedTime >= SLOW_MS ? 'info' : 'debug';
    if (logger.isLevelEnabled(level)) {
      logger[level](
        {
          req_id: request.id,
          method: request.method,
          route: request.routeOptions.url ?? 'unmatched',
          status: reply.statusCode,
          ms: Math.round(reply.elapsedTime * 100) / 100,
          principal: actorOf(request).id,
          // The client's address, or the one a trusted proxy forwarded (SWITCHBOARD_TRUSTED_PROXIES).
          ip: request.ip,
        },
        'request',
      );
    }
    done();
  });
}
