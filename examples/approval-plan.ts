/**
 * Two agents and a person: `researcher` gathers notes, a human approves them, `writer` drafts.
 *   npm start   # another terminal
 *   node --import tsx examples/approval-plan.ts      # then approve as printed
 */
import { pathToFileURL } from 'node:url';
import { createAgent, SwitchboardError, type Body, type Switchboard } from '../src/client/index.js';
import { adminClient, runUntilInterrupted, signingClient } from './connect.js';

async function startWorker(admin: Switchboard, agentId: string, work: (input: Record<string, unknown>) => unknown) {
  const client = await signingClient(admin, agentId);
  const agent = createAgent({ client, agentId, capabilities: [agentId] });
  agent.on('plan.step.execute', (message) => work((message.payload as { input?: Record<string, unknown> }).input ?? {}));
  await agent.start();
  return agent;
}

export async function main(admin: Switchboard, prefix = 'example') {
  const researcher = `${prefix}-researcher`;
  const writer = `${prefix}-writer`;
  const agents = [
    await startWorker(admin, researcher, (input) => ({ notes: [`${input.topic} matters`, `${input.topic} is hard`] })),
    await startWorker(admin, writer, (input) => ({ draft: `On ${input.topic}: ${(input.notes as string[]).join('; ')}.` })),
  ];
  const plan: Body<'coordination.createPlan'> = {
    alias: `${prefix}-article`,
    steps: [
      { id: 'research', type: 'agent', agent: researcher, input: { topic: '{{input.topic}}' } },
      { id: 'review', type: 'human_approval', depends_on: ['research'], prompt: 'Publish notes on {{input.topic}}?' },
      {
        id: 'write',
        type: 'agent',
        agent: writer,
        depends_on: ['review'],
        input: { topic: '{{input.topic}}', notes: '{{steps.research.output.notes}}' },
      },
    ],
  };
  try {
    await admin.coordination.createPlan({ body: plan });
  } catch (error) {
    // A second start: the plan is already there; keep it current.
    if (!(error instanceof SwitchboardError && error.status === 409)) throw error;
    await admin.coordination.updatePlan({ path: { plan_id: plan.alias }, body: plan });
  }
  const run = await admin.coordination.startRun({ body: { plan_id: plan.alias, input: { topic: 'agents' } } });
  return {
    run,
    async stop() {
      await Promise.all(agents.map((agent) => agent.stop()));
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runUntilInterrupted(async () => {
    const started = await main(adminClient());
    console.log(`run ${started.run.id} waits for approval:`);
    console.log(`  curl -X POST -H "Authorization: Bearer $(cat data/admin.key)" -H 'content-type: application/json' \\`);
    console.log(`    -d '{"approved":true}' http://127.0.0.1:8080/api/v1/coordination/runs/${started.run.id}/steps/review/approve`);
    return started;
  });
}
