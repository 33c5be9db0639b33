import fs from 'node:fs';
import path from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
import { DURATIONS_FILE } from './sequencer.js';

/**
 * A reporter that records in DURATIONS_FILE, the order the suite runs in (sequencer.ts), each file's
 * time in its worker, set-up and import included. A run of some files updates theirs; files gone
 * from the tree drop out.
 *   npx vitest run --reporter=default --reporter=./test/helpers/durations-reporter.ts
 */
export default class DurationsReporter implements Reporter {
  onTestRunEnd(testModules: readonly TestModule[]): void {
    const root = process.cwd();
    const file = path.join(root, DURATIONS_FILE);
    const durations = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, number>) : {};
    for (const module of testModules) {
      const { duration, setupDuration, collectDuration, prepareDuration } = module.diagnostic();
      durations[path.relative(root, module.moduleId)] = Math.round(duration + setupDuration + collectDuration + prepareDuration);
    }
    const kept = Object.entries(durations)
      .filter(([test]) => fs.existsSync(path.join(root, test)))
      .sort(([a], [b]) => (a < b ? -1 : 1));
    fs.writeFileSync(file, `${JSON.stringify(Object.fromEntries(kept), null, 2)}\n`);
  }
}
