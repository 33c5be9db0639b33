import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isoDuration, splitGoal } from '../../src/coordination/planner.js';
import type { Api } from '../helpers/api.js';
import { acknowledge, type InboxMessage } from '../helpers/agent.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { waitFor } from '../helpers/wait.js';
import { startServer, useServer, type TestServer } from '../helpers/server.js';

const G = '/api/v1/coordination/plans/generate';

/** 24 capabilities, one agent each (two for text.summarize), with descriptions and tags. */
const REGISTRY: [string, string, string, string][] = [
  ['web.fetch', 'fetcher', 'Download a web page or URL and return its HTML', 'download crawl scrape http'],
  ['text.summarize', 'summarizer-a', 'Summarize a long text into a short summary', 'summary digest tldr'],
  ['text.summarize', 'summarizer-b', 'Summarize a long text into a short summary', 'summary digest tldr'],
  ['text.translate', 'translator', 'Translate text between languages such as French and German', 'translation language'],
  ['email.send', 'mailer', 'Send an email message to recipients', 'mail notify inbox'],
  ['slack.post', 'slacker', 'Post a message to a Slack channel', 'chat notify channel'],
  ['pdf.extract', 'pdfer', 'Extract the text from a PDF document', 'pdf parse document'],
  ['image.resize', 'imager', 'Resize or crop an image to given dimensions', 'thumbnail picture photo'],
  ['image.caption', 'captioner', 'Describe an image with a caption', 'vision describe photo'],
  ['sql.query', 'analyst', 'Run an SQL query against the warehouse database', 'database report analytics'],
  ['chart.render', 'charter', 'Render a chart or graph from tabular data', 'plot visualization graph'],
  ['code.review', 'reviewer', 'Review a pull request and comment on the code', 'github diff lint'],
  ['code.test', 'tester', 'Run the test suite of a repository', 'ci unit tests'],
  ['deploy.release', 'deployer', 'Deploy a release to production', 'ship rollout production'],
  ['invoice.create', 'biller', 'Create an invoice for a customer', 'billing accounting'],
  ['payment.charge', 'payer', 'Charge a credit card payment', 'billing money stripe'],
  ['calendar.book', 'scheduler', 'Book a meeting in the calendar', 'schedule meeting appointment'],
  ['weather.forecast', 'weatherman', 'Get the weather forecast for a city', 'temperature rain'],
  ['sentiment.analyze', 'moody', 'Analyze the sentiment of customer reviews', 'opinion feedback emotion'],
  ['speech.transcribe', 'scribe', 'Transcribe an audio recording into text', 'audio speech voice'],
  ['data.clean', 'cleaner', 'Clean and deduplicate a CSV dataset', 'csv dedupe tidy'],
  ['ticket.create', 'triager', 'Create a support ticket in the helpdesk', 'support issue jira'],
  ['search.web', 'searcher', 'Search the web for pages about a topic', 'google research query'],
  ['doc.write', 'writer', 'Write a report document in markdown', 'author draft report'],
];

const GOALS: [string, string[]][] = [
  ['Fetch the page at https://example.com, then summarize it', ['web.fetch', 'text.summarize']],
  ['Summarize the article and then translate it to French', ['text.summarize', 'text.translate']],
  ['1. Extract the text from the PDF 2. Summarize it 3. Send an email with the summary', ['pdf.extract', 'text.summarize', 'email.send']],
  ['Run an SQL query for last month sales. Render a chart of the results. Post it to Slack.', ['sql.query', 'chart.render', 'slack.post']],
  ['Review the pull request, run the tests, then deploy the release to production', ['code.review', 'code.test', 'deploy.release']],
  ['Create an invoice for the customer and then charge the payment', ['invoice.create', 'payment.charge']],
  ['Transcribe the recording; summarize the transcript; write a report', ['speech.transcribe', 'text.summarize', 'doc.write']],
  ['Analyze the sentiment of the reviews, then create a support ticket for complaints', ['sentiment.analyze', 'ticket.create']],
  ['Resize the photo, then caption the image', ['image.resize', 'image.caption']],
  ['Clean the CSV dataset. Then run an SQL query on it. Then render a chart.', ['data.clean', 'sql.query', 'chart.render']],
  ['Get the weather forecast for Paris and then book a meeting in the calendar', ['weather.forecast', 'calendar.book']],
  ['Search the web for quantum computing, summarize the results, then write a report', ['search.web', 'text.summarize', 'doc.write']],
];

async function register(server: TestServer, prefix: string): Promise<void> {
  const clients = new Map<string, Api>();
  for (const [capability, agent, description, tags] of REGISTRY) {
    const agentId = `${prefix}${agent}`;
    if (!clients.has(agentId)) clients.set(agentId, await server.agent(agentId));
    const res = await clients
      .get(agentId)!
      .post('/api/v1/discovery/capabilities', { agent_id: agentId, capability, metadata: { description, tags: tags.split(' ') } });
    if (res.status !== 201) throw new Error(res.text);
  }
}

const capabilitiesOf = (steps: any[]) =>
  steps.filter((s) => s.type === 'agent').map((s) => s.capability ?? REGISTRY.find(([, a]) => s.agent.endsWith(a))?.[0]);

describe('goal splitting and durations', () => {
  it('splits sentences, numbered lists, then, and-then, commas and semicolons', () => {
    expect(splitGoal('Fetch it, then summarize it')).toEqual(['Fetch it', 'summarize it']);
    expect(splitGoal('1. Extract 2. Summarize 3) Send')).toEqual(['Extract', 'Summarize', 'Send']);
    expect(splitGoal('Do A. Then do B! Finally, do C; and then D')).toEqual(['Do A', 'do B', 'do C', 'D']);
    expect(splitGoal('summarize the text and then translate it')).toEqual(['summarize the text', 'translate it']);
  });

  it('formats ISO 8601 durations', () => {
    expect(isoDuration(0)).toBe('PT1S');
    expect(isoDuration(61_000)).toBe('PT1M1S');
    expect(isoDuration(3_600_000 + 120_000)).toBe('PT1H2M');
  });
});

describeEachDialect('plan generation', (dialect) => {
  const server = useServer(dialect);
  beforeAll(async () => {
    await register(server, '');
  });

  it.each(GOALS)('"%s" → the expected capabilities in order, as a plan that can be saved', async (goal, expected) => {
    const res = await server.api.post(G, { goal });
    expect(res.status, res.text).toBe(200);
    const plan = res.body.data;
    expect(capabilitiesOf(plan.steps)).toEqual(expected);
    expect(plan.planner).toBe('local');
    expect(plan.unmatched).toEqual([]);
    expect(plan.estimated_duration).toMatch(/^PT/);
    // Chained by depends_on, each step reading the previous output; several summarizers → by capability.
    plan.steps.slice(1).forEach((step: any, i: number) => expect(step.depends_on).toEqual([plan.steps[i].id]));
    const summarize = plan.steps.find((s: any) => s.capability === 'text.summarize' || s.agent?.startsWith('summarizer'));
    if (summarize) expect(summarize.capability).toBe('text.summarize');
    const saved = await server.api.post('/api/v1/coordination/plans', {
      alias: `generated-${dialect}-${goal.length}-${expected.join('-')}`,
      steps: plan.steps,
    });
    expect(saved.status, saved.text).toBe(201);
  });

  it('reports sub-goals nothing matches instead of inventing steps', async () => {
    const res = await server.api.post(G, { goal: 'Fetch the page at https://example.com, then juggle seven flaming torches' });
    expect(capabilitiesOf(res.body.data.steps)).toEqual(['web.fetch']);
    expect(res.body.data.unmatched).toEqual(['juggle seven flaming torches']);
  });

  it('places the approval before the first step with side effects, or before the last step', async () => {
    const effects = await server.api.post(G, {
      goal: 'Extract the text from the PDF, summarize it, then send an email with the summary',
      constraints: { require_human_approval: true },
    });
    expect(effects.body.data.steps.map((s: any) => s.type)).toEqual(['agent', 'agent', 'human_approval', 'agent']);
    expect(effects.body.data.steps[3].input.data).toBe(`{{steps.${effects.body.data.steps[1].id}.output}}`);
    const none = await server.api.post(G, { goal: 'Fetch the page, then summarize it', constraints: { require_human_approval: true } });
    expect(none.body.data.steps.map((s: any) => s.type)).toEqual(['agent', 'human_approval', 'agent']);
    expect(none.body.data.estimated_duration).toBe('PT1H2M');
  });

  it('puts the approval first when the first step has side effects, and the generated plan runs', async () => {
    const res = await server.api.post(G, {
      goal: 'Send an email to the team, then create a support ticket',
      constraints: { require_human_approval: true },
    });
    const steps = res.body.data.steps;
    expect(steps.map((s: any) => s.type)).toEqual(['human_approval', 'agent', 'agent']);
    expect(steps[0].depends_on).toBeUndefined();
    expect(steps[1].depends_on).toEqual([steps[0].id]);
    expect(steps[1].input.data).toBe('{{input}}');
    expect(capabilitiesOf(steps)).toEqual(['email.send', 'ticket.create']);
    const alias = `gated-${dialect}`;
    expect((await server.api.post('/api/v1/coordination/plans', { alias, steps })).status).toBe(201);
    const run = (await server.api.post('/api/v1/coordination/runs', { plan_id: alias, input: { to: 'team' } })).body.data;
    expect(run).toMatchObject({ status: 'waiting', current_step: steps[0].id });
  });

  it('never exceeds max_steps (the least relevant sub-goals are merged) and honours available_agents', async () => {
    const res = await server.api.post(G, {
      goal: 'Search the web for quantum computing, summarize the results, translate them to German, then write a report',
      constraints: { max_steps: 2 },
    });
    expect(res.body.data.steps).toHaveLength(2);
    expect(res.body.data.steps.map((s: any) => s.input.instruction).join(' ')).toMatch(/search.*summarize.*translate.*write|summarize/i);
    const gated = await server.api.post(G, {
      goal: 'Fetch it, summarize it, translate it',
      constraints: { max_steps: 2, require_human_approval: true },
    });
    expect(gated.body.data.steps).toHaveLength(2);
    const only = await server.api.post(G, { goal: 'Summarize the article', constraints: { available_agents: ['summarizer-b'] } });
    expect(only.body.data.steps).toEqual([expect.objectContaining({ agent: 'summarizer-b' })]);
    expect((await server.api.post(G, { goal: '' })).status).toBe(400);
    expect((await server.api.post(G, { goal: 'x', constraints: { max_steps: 0 } })).status).toBe(400);
  });
});

describeEachDialect('plan generation estimates from measured steps', (dialect) => {
  const clock = new FakeClock(Date.parse('2026-03-02T10:00:00.000Z'));
  const server = useServer(dialect, { clock });

  it('estimated_duration is the sum of the median measured durations of the capabilities, defaults otherwise', async () => {
    await register(server, '');
    const scribe = await server.agent('scribe');
    await server.api.post('/api/v1/coordination/plans', {
      alias: 'transcribe',
      steps: [{ id: 'listen', type: 'agent', capability: 'speech.transcribe' }],
    });
    // Three past transcriptions that took 30 s, 10 min and 90 s on the (moved) clock: median 90 s.
    for (const seconds of [30, 600, 90]) {
      await scribe.post('/api/v1/discovery/heartbeat', { agent_id: 'scribe' });
      const run = (await server.api.post('/api/v1/coordination/runs', { plan_id: 'transcribe' })).body.data;
      expect(run.steps[0].agent).toBe('scribe');
      const message = await waitFor(async () => {
        const res = await scribe.get('/api/v1/messaging/receive?agent_id=scribe&timeout=1&visibility_timeout=43200');
        return (res.body.data.messages as InboxMessage[])[0];
      });
      clock.advance(seconds * 1000);
      await acknowledge(scribe, message.message_id, { text: 'hello' });
      const done = (await server.api.get(`/api/v1/coordination/runs/${run.id}`)).body.data;
      expect(done.status).toBe('completed');
    }
    const one = await server.api.post(G, { goal: 'Transcribe the audio recording' });
    expect(one.body.data.steps).toEqual([expect.objectContaining({ type: 'agent', agent: 'scribe' })]);
    expect(one.body.data.estimated_duration).toBe('PT1M30S');
    // Measured 90 s + an approval (1 h) + a summary never measured (60 s).
    const two = await server.api.post(G, {
      goal: 'Transcribe the recording, then summarize the transcript',
      constraints: { require_human_approval: true },
    });
    expect(two.body.data.steps.map((s: any) => s.type)).toEqual(['agent', 'human_approval', 'agent']);
    expect(two.body.data.estimated_duration).toBe('PT1H2M30S');
  });
});

describeEachDialect('plan generation with a model endpoint', (dialect) => {
  const FAIL = Symbol('answer with a 500');
  let answer: unknown;
  let requests = 0;
  const fake = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      requests++;
      if (answer === FAIL) {
        res.statusCode = 500;
        res.end('{"error":"overloaded"}');
        return;
      }
      const parsed = JSON.parse(body) as { model: string; messages: { content: string }[] };
      expect(parsed.model).toBe('planner-1');
      expect(parsed.messages[1]!.content).toContain('text.summarize');
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          choices: [{ message: { role: 'assistant', content: typeof answer === 'string' ? answer : JSON.stringify(answer) } }],
        }),
      );
    });
  });
  let server: TestServer;
  beforeAll(async () => {
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    const { port } = fake.address() as AddressInfo;
    server = await startServer(dialect, {
      env: { SWITCHBOARD_LLM_URL: `http://127.0.0.1:${port}/v1`, SWITCHBOARD_LLM_MODEL: 'planner-1' },
    });
    await register(server, '');
  });
  afterAll(async () => {
    await server?.close();
    fake.close();
  });

  it("uses the model's plan when it is valid, and the local planner when it is not", async () => {
    answer = {
      description: 'model plan',
      steps: [
        { id: 'get', type: 'agent', capability: 'web.fetch', input: { url: '{{input.url}}' } },
        { id: 'tldr', type: 'agent', capability: 'text.summarize', depends_on: ['get'], input: { text: '{{steps.get.output}}' } },
      ],
    };
    const good = await server.api.post(G, { goal: 'Fetch the page, then summarize it' });
    expect(good.body.data).toMatchObject({ planner: 'llm', description: 'model plan', estimated_duration: 'PT2M' });
    expect(good.body.data.steps.map((s: any) => s.id)).toEqual(['get', 'tldr']);

    const invalid: unknown[] = [
      'not json at all',
      { steps: [{ id: 'a', type: 'agent', capability: 'teleport.now' }] },
      { steps: [{ id: 'a', type: 'agent', agent: 'fetcher', depends_on: ['a'] }] },
      {
        steps: [
          { id: 'a', type: 'agent', agent: 'fetcher', input: { x: '{{steps.b.output}}' } },
          { id: 'b', type: 'agent', agent: 'mailer' },
        ],
      },
    ];
    for (const bad of invalid) {
      answer = bad;
      const res = await server.api.post(G, { goal: 'Fetch the page, then summarize it' });
      expect(res.status).toBe(200);
      expect(res.body.data.planner, JSON.stringify(bad)).toBe('local');
      expect(capabilitiesOf(res.body.data.steps)).toEqual(['web.fetch', 'text.summarize']);
    }
    expect(requests).toBe(1 + invalid.length);

    // An endpoint that fails, or a plan longer than max_steps, falls back to the local planner too.
    answer = FAIL;
    const failing = await server.api.post(G, { goal: 'Fetch the page, then summarize it' });
    expect(failing.status).toBe(200);
    expect(failing.body.data.planner).toBe('local');
    expect(capabilitiesOf(failing.body.data.steps)).toEqual(['web.fetch', 'text.summarize']);
    answer = {
      steps: [
        { id: 'a', type: 'agent', capability: 'web.fetch' },
        { id: 'b', type: 'agent', capability: 'text.summarize', depends_on: ['a'] },
        { id: 'c', type: 'agent', capability: 'email.send', depends_on: ['b'] },
      ],
    };
    const tooLong = await server.api.post(G, { goal: 'Fetch the page, then summarize it', constraints: { max_steps: 2 } });
    expect(tooLong.body.data.planner).toBe('local');
    expect(tooLong.body.data.steps.length).toBeLessThanOrEqual(2);

    // A plan without the approval the request asked for is not used either.
    answer = { steps: [{ id: 'get', type: 'agent', capability: 'web.fetch' }] };
    const ungated = await server.api.post(G, {
      goal: 'Fetch the page, summarize it, then send an email',
      constraints: { require_human_approval: true },
    });
    expect(ungated.body.data.planner).toBe('local');
    expect(ungated.body.data.steps.map((s: any) => s.type)).toEqual(['agent', 'agent', 'human_approval', 'agent']);
  });
});

describeEachDialect('plan generation with an unreachable model endpoint', (dialect) => {
  const server = useServer(dialect, { env: { SWITCHBOARD_LLM_URL: 'http://127.0.0.1:9/v1', SWITCHBOARD_LLM_MODEL: 'absent' } });

  it('falls back to the local planner', async () => {
    await register(server, '');
    const res = await server.api.post(G, { goal: 'Fetch the page, then summarize it' });
    expect(res.status).toBe(200);
    expect(res.body.data.planner).toBe('local');
    expect(capabilitiesOf(res.body.data.steps)).toEqual(['web.fetch', 'text.summarize']);
  });
});
