import { Writable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { lazyRequestLogger } from '../../src/http/request-logger.js';

function memoryLogger(): { logger: pino.Logger; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  const logger = pino({ level: 'info' }, stream);
  return {
    logger,
    lines: () =>
      chunks
        .join('')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
  };
}

describe('lazyRequestLogger', () => {
  it('builds no child until something is logged', () => {
    const { logger } = memoryLogger();
    const child = vi.spyOn(logger, 'child');
    const requestLogger = lazyRequestLogger(logger as FastifyBaseLogger, { reqId: 'req_1' }, {});
    expect(requestLogger.level).toBe('info');
    requestLogger.silent('nothing');
    expect(child).not.toHaveBeenCalled();
  });

  it('logs through a child with the request bindings, at the parent level, built once', () => {
    const { logger, lines } = memoryLogger();
    const child = vi.spyOn(logger, 'child');
    const requestLogger = lazyRequestLogger(logger as FastifyBaseLogger, { reqId: 'req_1' }, {});
    requestLogger.error({ err: new Error('boom') }, 'request failed');
    requestLogger.info('second %s', 'line');
    requestLogger.debug('below the level');
    expect(child).toHaveBeenCalledTimes(1);
    const [first, second] = lines();
    expect(first).toMatchObject({ level: 50, reqId: 'req_1', msg: 'request failed', err: { message: 'boom' } });
    expect(second).toMatchObject({ level: 30, reqId: 'req_1', msg: 'second line' });
    expect(lines()).toHaveLength(2);
  });

  it('takes a level of its own from the options', () => {
    const { logger, lines } = memoryLogger();
    const requestLogger = lazyRequestLogger(logger as FastifyBaseLogger, { reqId: 'req_2' }, { level: 'warn' });
    expect(requestLogger.level).toBe('warn');
    requestLogger.info('below the request level');
    requestLogger.child({ part: 'x' }).warn('from a grandchild');
    expect(lines()).toEqual([expect.objectContaining({ level: 40, reqId: 'req_2', part: 'x', msg: 'from a grandchild' })]);
  });
});
