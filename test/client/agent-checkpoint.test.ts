import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { R, useCoordination } from '../coordination/fixture.js';

/** Runs the checkpointing SDK agent (test/fixtures/checkpoint) as a process of its own; `saved` is the last count it printed. */
function agentProcess(url: string, key: string, agentId: string) {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/checkpoint/agent.fixture.ts'], {
    env: { PATH: process.env.PATH, SWITCHBOARD_URL: url, SWITCHBOARD_API_KEY: key, AGENT_ID: agentId },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const killWithTest = () => child.kill('SIGKILL');
  process.once('exit', killWithTest);
  const state = { saved: 0, child, exited: new Promise((resolve) => child.once('exit', resolve)) };
  void state.exited.then(() => process.off('exit', killWithTest));
  readline.createInterface({ input: child.stdout! }).on('line', (line) => {
    const match = /^saved (\d+)$/.exec(line);
    if (match) state.saved = Number(match[1]);
  });
  return state;
}

describeEachDialect('an SDK agent killed mid-step', (dialect) => {
  const { server, unique, plan, start, finished } = useCoordination(dialect);

  it('resumes from its last checkpoint in a second process', async () => {
    const agentId = unique('counter');
    const api = await server.agent(agentId);
    const id = await plan({ steps: [{ id: 'count', type: 'agent', agent: agentId, input: { total: 40 } }] });
    const run = await start(id);

    const first = agentProcess(api.baseUrl, api.key!, agentId);
    const deadline = Date.now() + 30_000;
    while (first.saved < 5 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(first.saved).toBeGreaterThanOrEqual(5);
    first.child.kill('SIGKILL');
    await first.exited;
    const last = first.saved;

    const second = agentProcess(api.baseUrl, api.key!, agentId);
    try {
      const done = await finished(run.id);
      // A checkpoint saved after the last line printed (killed in between) is one more.
      expect(done.output.count.resumed_from).toBeGreaterThanOrEqual(last);
      expect(done.output.count.resumed_from).toBeLessThanOrEqual(last + 1);
      expect(done.output.count.done).toBe(40);
      expect(done.steps[0].checkpoint).toMatchObject({ state: { done: 40 }, attempt: 1 });
      const timeline = (await server.api.get(`${R}/${run.id}/events`)).body.data as { type: string }[];
      expect(timeline.filter((e) => e.type === 'step.started')).toHaveLength(1);
      const logs = (await server.api.get(`${R}/${run.id}/logs`)).body.data as { message: string }[];
      expect(logs.map((l) => l.message)).toEqual(['starting from 0', `starting from ${done.output.count.resumed_from}`]);
    } finally {
      second.child.kill('SIGKILL');
      await second.exited;
    }
  }, 60_000);
});
