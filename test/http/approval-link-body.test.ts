import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { FakeClock } from '../helpers/clock.js';
import { useTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startPartialRequest, type PartialRequest } from '../helpers/partial-request.js';
import { spawnServer } from '../helpers/process.js';
import { watchRss } from '../helpers/process-memory.js';
import { useServer } from '../helpers/server.js';
import { within } from '../helpers/wait.js';

const C = '/api/v1/coordination';
const DAY_MS = 86_400_000;
/** Well formed (payload.signature), signed by nobody. */
const BOGUS_TOKEN = `${Buffer.from(JSON.stringify({ r: 'run_x', s: 'gate', a: 'w', e: Date.now() + DAY_MS })).toString('base64url')}.${'A'.repeat(43)}`;
const JSON_TYPE = { 'content-type': 'application/json' };

describeEachDialect('approval links: the token is checked before the body', (dialect) => {
  const clock = new FakeClock(Date.now());
  const server = useServer(dialect, { clock });
  let plans = 0;

  /** A run waiting at a human_approval step, and the token of its event's link, or of a link made for a person. */
  async function waitingLink(of: 'event' | 'person' = 'person'): Promise<string> {
    const plan = await server.api.post(`${C}/plans`, {
      alias: `link-body-${dialect}-${++plans}`,
      steps: [{ id: 'gate', type: 'human_approval', prompt: 'Ship?' }],
    });
    expect(plan.status, plan.text).toBe(201);
    const run = await server.api.post(`${C}/runs`, { plan_id: plan.body.data.id });
    expect(run.status, run.text).toBe(201);
    let url: string;
    if (of === 'event') {
      url = (await server.api.get(`/api/v1/events?type=approval.requested&subject=${run.body.data.id}`)).body.data.at(-1).data.approve_url;
    } else {
      const username = `link-body-${dialect}-${plans}`;
      expect((await server.api.post('/api/v1/auth/users', { username, role: 'approver', password: 'correct horse battery' })).status).toBe(
        201,
      );
      url = (await server.api.post(`${C}/runs/${run.body.data.id}/steps/gate/links`, { approver: `user:${username}` })).body.data
        .approve_url;
    }
    return url.slice(url.lastIndexOf('/') + 1);
  }

  /** A POST that declares a 1 MiB body and sends 1 KiB of it: answered only if the server does not wait for the rest. */
  async function stalledPost(token: string): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
    const partial = startPartialRequest(`${server.url}${C}/approvals/${token}`, 'POST', JSON_TYPE, 1024 * 1024, Buffer.alloc(1024, 0x20));
    try {
      return await within(partial.answer, 10_000, 'the answer to a POST whose body never arrives');
    } finally {
      partial.request.destroy();
    }
  }

  it('refuses a bogus token (404) without waiting for the body', async () => {
    const answer = await stalledPost(BOGUS_TOKEN);
    expect(answer.status).toBe(404);
    expect(answer.headers.connection).toBe('close');
    expect(JSON.parse(answer.text).error.code).toBe('not_found');
  });

  it("refuses the event's link, which decides nothing (403), without waiting for the body", async () => {
    const answer = await stalledPost(await waitingLink('event'));
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.text).error.message).toMatch(/decides nothing by itself/);
  });

  it('refuses an expired link (409) without waiting for the body', async () => {
    const token = await waitingLink();
    clock.advance(8 * DAY_MS);
    try {
      const answer = await stalledPost(token);
      expect(answer.status).toBe(409);
      expect(JSON.parse(answer.text).error.message).toMatch(/expired/);
    } finally {
      clock.advance(-8 * DAY_MS);
    }
  });

  it('caps the body of a decision (413) and still takes one of ordinary size', async () => {
    const token = await waitingLink();
    const big = await server.api.post(`${C}/approvals/${token}`, { approved: true, padding: 'x'.repeat(40 * 1024) }, { key: null });
    expect(big.status).toBe(413);
    const decided = await server.api.post(`${C}/approvals/${token}`, { approved: true, comment: '\u0001'.repeat(4000) }, { key: null });
    expect(decided.status, decided.text).toBe(200);
  });
});

describeEachDialect('approval links: the anonymous budget', (dialect) => {
  const server = useServer(dialect, { env: { SWITCHBOARD_RATE_LIMIT_ANONYMOUS: '3' } });

  it('counts each decision POST, refused or not, in the client address’s anonymous budget (429 past it)', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++)
      statuses.push((await server.api.post(`${C}/approvals/${BOGUS_TOKEN}`, { approved: true }, { key: null })).status);
    expect(statuses).toEqual([404, 404, 404, 429]);
  });
});

const CONNECTIONS = 400;
const WAVE = 100;
const DECLARED_BYTES = 1024 * 1024;
const SENT_BYTES = 512 * 1024;

describeEachDialect('approval links: memory under slow bodies with bogus tokens', (dialect) => {
  const database = useTestDatabase(dialect);
  const adminKey = `sk_test_${randomBytes(16).toString('hex')}`;

  it.runIf(process.platform === 'linux')(
    `keeps RSS growth under 150 MB and /healthz under 200 ms while ${CONNECTIONS} decisions with bogus tokens stall in their bodies`,
    { timeout: 180_000 },
    async () => {
      // No anonymous budget: refusing before the body alone must bound the memory.
      const server = await spawnServer(database(), adminKey, { SWITCHBOARD_RATE_LIMIT_ANONYMOUS: '0' });
      const partials: PartialRequest[] = [];
      const rss = watchRss(server.child.pid!);
      try {
        const body = Buffer.alloc(SENT_BYTES, 0x20);
        let refused = 0;
        for (let wave = 0; wave < CONNECTIONS / WAVE; wave++) {
          const opened = Array.from({ length: WAVE }, () => {
            const partial = startPartialRequest(`${server.url}${C}/approvals/${BOGUS_TOKEN}`, 'POST', JSON_TYPE, DECLARED_BYTES, body);
            partials.push(partial);
            void partial.answer.then((answer) => answer.status === 404 && refused++);
            return new Promise((resolve) => partial.request.once('socket', (socket) => socket.once('connect', resolve)));
          });
          await within(Promise.all(opened), 30_000, `connections of wave ${wave}`);
        }
        // The health probe is answered promptly while the stalled requests are open.
        const latencies: number[] = [];
        for (let i = 0; i < 5; i++) {
          const started = performance.now();
          const res = await fetch(`${server.url}/healthz`);
          await res.arrayBuffer();
          expect(res.status).toBe(200);
          latencies.push(performance.now() - started);
        }
        // Every stalled request gets its 404 without sending the rest of its body.
        await within(Promise.all(partials.map((p) => p.answer)), 60_000, 'the answers to the stalled requests');
        const { growthMb, figures } = rss.stop();
        expect(refused).toBe(CONNECTIONS);
        // Measured on Node 24 (2 cores): 89-117 MB against a baseline taken just after start-up
        // (208-263 MB), most of it the 400 connections themselves; the bodies they stall in, read
        // whole, would add 200 MB more.
        expect(growthMb, figures).toBeLessThan(150);
        const median = latencies.sort((a, b) => a - b)[2]!;
        expect(median, `/healthz took ${latencies.map(Math.round).join(', ')} ms`).toBeLessThan(200);
      } finally {
        rss.stop();
        for (const partial of partials) partial.request.destroy();
        server.child.kill('SIGTERM');
        expect(await server.exited).toBe(0);
      }
    },
  );
});
