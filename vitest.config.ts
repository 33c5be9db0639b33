import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { LongestFirst } from './test/helpers/sequencer.js';

/** #client/* is the client package's sources, as tsconfig.json's paths have it (Node, after a build, reads its dist). */
const clientSources = {
  find: /^#client\/(.*)\.js$/,
  replacement: fileURLToPath(new URL('./clients/typescript/src/$1.ts', import.meta.url)),
};

export default defineConfig({
  resolve: { alias: [clientSources] },
  test: {
    include: ['test/**/*.test.ts'],
    // After each file: nothing it opened (servers, pools, databases, workers, timers) is still open.
    setupFiles: ['test/helpers/open-handles.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    pool: 'forks',
    // A worker runs file after file with its modules loaded (a fresh fork per file spent seconds
    // each importing the app again); the open-handle check accounts per file all the same.
    isolate: false,
    // Two cores on the reference machine: more workers only add contention.
    maxWorkers: 2,
    sequence: { sequencer: LongestFirst },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
