import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { PYTHON_OPERATIONS_FILE, renderPythonOperations, type OpenApiDocument } from '../../scripts/generate-python.js';
import { createTestDatabase, type Dialect, type TestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

/*
 * The Python SDK (clients/python): its generated operation table must be what the generator makes
 * of the OpenAPI document the server serves (`npm run generate:python` after a route changes), and
 * its pytest suite runs against a real server.
 */

const PYTHON = process.env.SWITCHBOARD_TEST_PYTHON ?? 'python3';
const hasPytest = spawnSync(PYTHON, ['-c', 'import pytest'], { stdio: 'ignore' }).status === 0;
if (!hasPytest && process.env.CI) throw new Error(`${PYTHON} with pytest is needed for the Python SDK's tests`);

/** Runs pytest on the SDK's tests; resolves with its exit code and output. */
function pytest(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(PYTHON, ['-m', 'pytest', 'clients/python/tests', '-q', '-rs', '-p', 'no:cacheprovider', '--tb=short'], {
      env: { PATH: process.env.PATH, PYTHONDONTWRITEBYTECODE: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => resolve({ code, output }));
  });
}

describeEachDialect('the Python SDK', (dialect: Dialect) => {
  const server = useServer(dialect, { env: { SWITCHBOARD_RATE_LIMIT: '0' } });

  it('its generated operation table matches the OpenAPI document (npm run generate:python)', async () => {
    const res = await server.api.get('/api/v1/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body as OpenApiDocument;
    const checkedIn = fs.readFileSync(PYTHON_OPERATIONS_FILE, 'utf8');
    expect(renderPythonOperations(doc) === checkedIn, `${PYTHON_OPERATIONS_FILE} is stale: run npm run generate:python`).toBe(true);

    // A route added to the document makes the checked-in table stale.
    const added = structuredClone(doc);
    added.paths['/api/v1/messaging/echo'] = {
      get: {
        operationId: 'messaging_echo',
        summary: 'Echo',
        parameters: [],
        responses: { '200': { content: { 'application/json': { schema: { properties: { data: { type: 'object' } } } } } } },
      },
    };
    const regenerated = renderPythonOperations(added);
    expect(regenerated).not.toBe(checkedIn);
    expect(regenerated).toContain('def echo(self, **arguments: Unpack[MessagingEchoArgs]) -> dict[str, Any]:');
  });

  // The SDK is what this runs, once: the server's answers on PostgreSQL are the TypeScript suites' to check.
  it.skipIf(!hasPytest || dialect !== 'sqlite')(
    'its pytest suite passes against the server (every operation, the agent worker, signing, a 50 MB streamed artifact, a restart)',
    async () => {
      // The restart test's own server, on a database of its own.
      const restartable: TestDatabase = await createTestDatabase(dialect);
      try {
        const serve = {
          argv: [process.execPath, path.resolve('dist/cli.js'), 'serve'],
          env: {
            SWITCHBOARD_ADMIN_KEY: server.adminKey,
            SWITCHBOARD_DATA_DIR: restartable.dataDir,
            SWITCHBOARD_RATE_LIMIT: '0',
            SWITCHBOARD_LOG_LEVEL: 'info',
            ...restartable.env,
          },
        };
        const { code, output } = await pytest({
          SWITCHBOARD_TEST_URL: server.url,
          SWITCHBOARD_TEST_ADMIN_KEY: server.adminKey,
          SWITCHBOARD_TEST_SERVE: JSON.stringify(serve),
        });
        expect(code, output).toBe(0);
        // Only the signing tests may skip, where the optional cryptography package is missing.
        expect(output).not.toMatch(/SKIPPED \[\d+\] (?!.*cryptography)/);
      } finally {
        await restartable.drop();
      }
    },
    300_000,
  );
});
