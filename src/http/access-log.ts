import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';

/**
 * One line per answered request at `info`: what was asked (the route pattern, so no ids or query
 * strings with secrets in them), the answer, its time and who asked. Never headers or bodies,
 * where keys and signatures travel.
 */
export function installAccessLog(app: FastifyInstance, logger: Logger): void {
  app.addHook('onResponse', (request, reply, done) => {
    if (logger.isLevelEnabled('info')) {
      logger.info(
        {
          req_id: request.id,
          method: request.method,
          route: request.routeOptions.url ?? 'unmatched',
          status: reply.statusCode,
          ms: Math.round(reply.elapsedTime * 100) / 100,
          principal: request.principal?.actor ?? null,
        },
        'request',
      );
    }
    done();
  });
}
