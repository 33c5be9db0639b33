import fs from 'node:fs';
import { expect, it } from 'vitest';
import { describeEachDialect } from './helpers/dialects.js';
import { useServer } from './helpers/server.js';

/** The README's example request bodies, each with the path of the paragraph that introduces it (`— \`POST /path\``). */
function readmeExamples(): { path: string; body: unknown }[] {
  const readme = fs.readFileSync('README.md', 'utf8');
  const start = readme.indexOf('### Examples: a plan, a routine and a task');
  const section = readme.slice(start, readme.indexOf('\n#', start + 4));
  const examples: { path: string; body: unknown }[] = [];
  for (const block of section.matchAll(/```json\n([\s\S]*?)```/g)) {
    const before = section.slice(0, block.index);
    const path = [...before.matchAll(/— `POST (\/\S+)`/g)].pop()?.[1];
    if (path === undefined) throw new Error(`no '— \`POST /path\`' before the README example at ${block.index}`);
    examples.push({ path, body: JSON.parse(block[1]!) });
  }
  return examples;
}

describeEachDialect('the README', (dialect) => {
  const server = useServer(dialect);

  it('shows a plan, a routine and a task the API accepts as they are', async () => {
    const examples = readmeExamples();
    expect(examples.map((example) => example.path)).toEqual(['/api/v1/coordination/plans', '/core/api/v1/routines', '/core/api/v1/tasks']);
    for (const { path, body } of examples) {
      const created = await server.api.post(path, body);
      expect(created.status, `${path}: ${created.text}`).toBe(201);
    }
  });
});
