import fs from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Each test file's duration in ms from a full run, by path from the repository root (durations-reporter.ts). */
export const DURATIONS_FILE = 'test/durations.json';

/**
 * Runs the longest files first (by DURATIONS_FILE), so that the run does not end with one worker
 * busy on a long file while the other has nothing left. Files it does not list yet go first: they
 * may be long. vitest's own ordering uses a cache that a fresh clone does not have.
 */
export class LongestFirst extends BaseSequencer {
  override sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const durations = JSON.parse(fs.readFileSync(path.join(root, DURATIONS_FILE), 'utf8')) as Record<string, number>;
    const duration = (spec: TestSpecification) => durations[path.relative(root, spec.moduleId)] ?? Number.MAX_SAFE_INTEGER;
    // Among files it does not list, vitest's own order (its cache's durations, else larger files first).
    return super.sort(files).then((ordered) => ordered.sort((a, b) => duration(b) - duration(a)));
  }
}
