import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import type { TestDatabase } from './database.js';

const CLI = path.resolve('dist/cli.js');

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  exited: Promise<number | null>;
}

/** Runs `switchboard serve` as a real child process (for crash and signal tests); needs `npm run build`. */
export async function spawnServer(database: TestDatabase, adminKey: string, env: Record<string, string> = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, [CLI, 'serve'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      PATH: process.env.PATH,
      SWITCHBOARD_PORT: '0',
      SWITCHBOARD_ADMIN_KEY: adminKey,
      SWITCHBOARD_LOG_LEVEL: 'info',
      SWITCHBOARD_RATE_LIMIT: '0',
      SWITCHBOARD_DATA_DIR: database.dataDir,
      ...database.env,
      ...env,
    },
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // A test that times out before stopping its server (a slow start on a loaded machine) leaves no process behind.
  const killWithTest = () => child.kill('SIGKILL');
  process.once('exit', killWithTest);
  void exited.then(() => process.off('exit', killWithTest));
  const url = await new Promise<string>((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      try {
        const parsed = JSON.parse(line) as { url?: string };
        if (parsed.url) resolve(parsed.url);
      } catch {
        // not JSON
      }
    });
    void exited.then((code) => reject(new Error(`server exited with ${code} before listening`)));
  });
  return { url, child, exited };
}
