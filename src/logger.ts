import pino, { type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';

/**
 * The server's logger: JSON lines on stdout, or, with SWITCHBOARD_LOG_FORMAT=pretty, coloured
 * lines for a terminal (pino-pretty, in a worker thread). `destination` is for tests.
 */
export function createLogger(config: Pick<Config, 'logLevel' | 'logFormat'>, destination?: DestinationStream): Logger {
  const options = { level: config.logLevel, base: { service: 'switchboard' } };
  if (destination) return pino(options, destination);
  if (config.logFormat === 'pretty')
    return pino({ ...options, transport: { target: 'pino-pretty', options: { ignore: 'service,pid,hostname' } } });
  return pino(options);
}
