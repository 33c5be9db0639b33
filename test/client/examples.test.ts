import { spawn } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Switchboard } from '../../src/client/index.js';
import { signingClient } from '../../examples/connect.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Runs an example exactly as the README says (`node --import tsx examples/NAME.ts`), pointed at
 * the test server through SWITCHBOARD_URL and SWITCHBOARD_API_KEY.
 */
function runExample(name: string, url: string, apiKey: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', `examples/${name}.ts`], {
    cwd: root,
    env: { ...process.env, SWITCHBOARD_URL: url, SWITCHBOARD_API_KEY: apiKey },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    output: () => output,
    /** Resolves with the output once the example says it is running. */
    async running(): Promise<string> {
      await waitFor(() => output.includes('running; Ctrl-C stops') || child.exitCode !== null, 60_000, 50);
      if (child.exitCode !== null) throw new Error(`example ${name} exited with ${child.exitCode}:\n${output}`);
      return output;
    },
    /** Ctrl-C: the example stops its agents and exits. */
    async interrupt(): Promise<number | null> {
      if (child.exitCode === null) child.kill('SIGINT');
      return exited;
    },
  };
}

// The examples' own work runs on both backends in agent.test.ts; this checks the one command each.
describe('the examples run with one command', () => {
  const server = useServer('sqlite');
  const admin = () => new Switchboard({ url: server.url, apiKey: server.adminKey });

  it('echo-agent answers until Ctrl-C', async () => {
    const example = runExample('echo-agent', server.url, server.adminKey);
    try {
      await example.running();
      const caller = await signingClient(admin(), 'command-caller');
      await caller.messaging.send({ body: { destination: 'echo', event_name: 'echo', payload: { n: 7 } } });
      const reply = await waitFor(async () => (await caller.messaging.receive({ query: { timeout: 1 } })).messages[0], 20_000);
      expect(reply).toMatchObject({ source: 'echo', event_name: 'echo.reply', payload: { n: 7 } });
    } finally {
      expect(await example.interrupt()).toBe(0);
    }
  }, 90_000);

  it('summarizer-agent creates its cron routine, succeeds on its executions, and removes the routine on Ctrl-C', async () => {
    const example = runExample('summarizer-agent', server.url, server.adminKey);
    let routineId: string | undefined;
    try {
      await example.running();
      const routines = await admin().routines.list({ query: { trigger_type: 'cron' } });
      const routine = routines.find((r) => r.target_agent === 'summarizer');
      expect(routine).toMatchObject({ cron_expression: '* * * * *', enabled: true });
      routineId = routine!.id;
      const execution = await admin().routines.trigger({ path: { id: routineId } });
      const done = await waitFor(async () => {
        const current = await admin().routines.getExecution({ path: { id: execution.id } });
        return current.status === 'success' ? current : undefined;
      }, 20_000);
      expect(done.output).toMatchObject({ summary: 'Switchboard routes work to agents.' });
    } finally {
      expect(await example.interrupt()).toBe(0);
    }
    await expect(admin().routines.get({ path: { id: routineId! } })).rejects.toMatchObject({ status: 404 });
  }, 90_000);

  it('approval-plan starts a run that completes once approved', async () => {
    const example = runExample('approval-plan', server.url, server.adminKey);
    try {
      const output = await example.running();
      const runId = /run (run_\w+) waits for approval/.exec(output)?.[1];
      expect(runId).toBeDefined();
      expect(output).toContain(`/api/v1/coordination/runs/${runId}/steps/review/approve`);
      const client = admin();
      await waitFor(async () => (await client.coordination.getRun({ path: { run_id: runId! } })).status === 'waiting', 20_000);
      await client.coordination.approveStep({ path: { run_id: runId!, step_id: 'review' }, body: { approved: true } });
      const run = await waitFor(async () => {
        const current = await client.coordination.getRun({ path: { run_id: runId! } });
        return current.status === 'completed' ? current : undefined;
      }, 20_000);
      expect(run.steps.find((s) => s.id === 'write')?.output).toMatchObject({ draft: expect.stringContaining('On agents') });
    } finally {
      expect(await example.interrupt()).toBe(0);
    }
  }, 90_000);
});
