/**
 * `npm run bench [-- suite …]`: runs every suite in bench/ (each a file exporting
 * `default async function (): Promise<void>` that records its section of RESULTS.md), or
 * the named ones. Build first (`npm run build`): suites start dist/cli.js.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './lib.js';

const available = fs
  .readdirSync(path.join(ROOT, 'bench'))
  .filter((f) => f.endsWith('.ts') && !['lib.ts', 'run.ts'].includes(f))
  .map((f) => f.replace(/\.ts$/, ''))
  .sort();
const requested = process.argv.slice(2);
const unknown = requested.filter((name) => !available.includes(name));
if (unknown.length > 0) {
  console.error(`unknown suite(s): ${unknown.join(', ')}; available: ${available.join(', ')}`);
  process.exit(2);
}
if (!fs.existsSync(path.join(ROOT, 'dist', 'cli.js'))) {
  console.error('dist/cli.js is missing: run `npm run build` first');
  process.exit(2);
}
for (const name of requested.length > 0 ? requested : available) {
  console.log(`\n=== bench: ${name} ===`);
  const suite = (await import(`./${name}.ts`)) as { default: () => Promise<void> };
  await suite.default();
}
