#!/usr/bin/env -S node --min-semi-space-size=32 --max-semi-space-size=32
// The flags give V8's young generation its full size from the start: every request leaves KiBs
// of short-lived objects, and with Node's defaults the server scavenged often and slowly (650
// against 100 ms of pauses in 8 s of authenticated reads at 50 connections, --trace-gc), ~10%
// of its CPU. V8 takes them only at startup; `npm start` and the benchmarks pass the same ones.
import fs from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { fail, HELP } from './cli/help.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { DataDirInUse, lockDataDir, type DataDirLock } from './db/data-dir-lock.js';

/**
 * A signal this soon after the first is the same stop delivered twice, not an operator's second
 * one: a terminal's Ctrl-C reaches the whole process group, and `npm start` forwards it again.
 */
const REPEATED_SIGNAL_MS = 1_000;

// The server, the MCP bridge and the offline commands are imported when their command runs: `--version`,
// `--help` and a mistyped command answer without loading the whole app.

const VERSION = (JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** SQLite's data directory, for this server alone (PostgreSQL's nodes share a database by design). */
function lockForServe(config: Config): DataDirLock | undefined {
  if (config.databaseUrl) return undefined;
  try {
    return lockDataDir(config.dataDir);
  } catch (err) {
    if (!(err instanceof DataDirInUse)) throw err;
    console.error(`switchboard: ${err.message}`);
    process.exit(1);
  }
}

async function serve(config: Config): Promise<void> {
  const lock = lockForServe(config);
  const { createApp } = await import('./app.js');
  const app = await createApp({ config });
  // The handlers are in place before the URL is logged: a supervisor that stops the server as soon
  // as it is up still gets a drain, not the default death by signal.
  const listening = app.listen();
  let stoppingSince: number | undefined;
  const stop = (signal: NodeJS.Signals) => {
    const { logger } = app.platform;
    if (stoppingSince !== undefined) {
      if (Date.now() - stoppingSince < REPEATED_SIGNAL_MS) return;
      logger.warn({ signal }, 'second signal: exiting without finishing the shutdown');
      process.exit(128 + os.constants.signals[signal]);
    }
    stoppingSince = Date.now();
    logger.info({ signal }, 'shutting down (a second signal exits at once)');
    listening
      .catch(() => {})
      .then(() => app.close())
      .then(
        () => {
          lock?.release();
          process.exit(0);
        },
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  await listening;
}
async function main(argv: string[]): Promise<void> {
  const command = argv[0] && !argv[0].startsWith('-') ? argv[0] : 'serve';
  const args = command === argv[0] ? argv.slice(1) : argv;
  const help = args.includes('--help') || args.includes('-h');
  if (argv[0] === '--version' || argv[0] === '-v') {
    console.log(VERSION);
    return;
  }
  if (command === 'help' || (command === 'serve' && help && argv[0] !== 'serve')) {
    console.log(HELP.main);
    return;
  }
  if (!(command in HELP) || command === 'main') fail(`unknown command '${command}'; see 'switchboard --help'`);
  if (help) {
    console.log(HELP[command]);
    return;
  }
  if (command === 'mcp') {
    // A client of a running server: it needs no local configuration or database.
    const { values } = parseArgs({ args, options: { url: { type: 'string' }, key: { type: 'string' } } });
    const url = values.url ?? process.env.SWITCHBOARD_URL;
    const key = values.key ?? process.env.SWITCHBOARD_API_KEY;
    if (!url || !key) fail('mcp needs --url URL and --key KEY');
    const { serveStdio } = await import('./mcp/stdio.js');
    return serveStdio(url, key);
  }
  let config: Config;
  try {
    if (command === 'serve') {
      const { values } = parseArgs({
        args,
        options: { host: { type: 'string' }, port: { type: 'string' }, 'data-dir': { type: 'string' } },
      });
      config = loadConfig({
        ...process.env,
        ...(values.host !== undefined && { SWITCHBOARD_HOST: values.host }),
        ...(values.port !== undefined && { SWITCHBOARD_PORT: values.port }),
        ...(values['data-dir'] !== undefined && { SWITCHBOARD_DATA_DIR: values['data-dir'] }),
      });
    } else {
      config = loadConfig();
    }
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
  if (command === 'serve') return serve(config);
  const { audit, blobs, groups, keys, migrate, users } = await import('./cli/commands.js');
  switch (command) {
    case 'migrate':
      return migrate(config);
    case 'keys':
      return keys(config, args);
    case 'users':
      return users(config, args);
    case 'groups':
      return groups(config, args);
    case 'audit':
      return audit(config, args);
    case 'blobs':
      return blobs(config, args);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err instanceof Error ? `switchboard: ${err.message}` : err);
  process.exit(1);
});
