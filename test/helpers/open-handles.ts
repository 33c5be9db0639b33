/**
 * A setup file (vitest.config.ts `setupFiles`): after each test file, fails the file when
 * something it opened is still open. Servers, sockets and child processes are the event-loop
 * resources of `process.getActiveResourcesInfo()`, compared with a snapshot taken before the
 * file. Timers (made through the global functions), pg pools and clients, better-sqlite3
 * Databases and worker threads are tracked instead (open-handles-tracking.ts, patched once per
 * worker): vitest's own timer for the running hook is pending while the check runs, and the
 * others hold no resource the snapshot shows. Whatever is tracked is named with where it was opened.
 *
 * Closing is often asynchronous (a socket's FIN, a child's exit, a pool's end), so the check
 * waits up to SETTLE_MS (SWITCHBOARD_TEST_SETTLE_MS, 2 s by default) for the leftovers to go
 * before it names them.
 */
import path from 'node:path';
import { afterAll, expect } from 'vitest';
import { fileStarts, leftOpen, realSetTimeout } from './open-handles-tracking.js';

const SETTLE_MS = Number(process.env.SWITCHBOARD_TEST_SETTLE_MS ?? 2000);

const before = fileStarts();

afterAll(async () => {
  const deadline = Date.now() + SETTLE_MS;
  let leaks = leftOpen(before);
  while (leaks.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => realSetTimeout(resolve, 20).unref());
    leaks = leftOpen(before);
  }
  if (leaks.length > 0) {
    throw new Error(
      `${path.relative(process.cwd(), expect.getState().testPath ?? '?')} left open after its last test (waited ${SETTLE_MS} ms for them to close):\n  - ${leaks.join('\n  - ')}`,
    );
  }
});
