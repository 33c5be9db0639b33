import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { EXACT_TOTAL_BOUND } from '../../src/kernel/pagination.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const API = '/api/v1';

describeEachDialect('lists: keyset cursors and bounded totals', (dialect) => {
  const server = useServer(dialect);

  /** Every item of a list, read page by page through next_cursor, and the totals each page said. */
  async function walk(path: string, limit: number): Promise<{ ids: string[]; totals: number[]; pages: number }> {
    const ids: string[] = [];
    const totals: number[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const sep = path.includes('?') ? '&' : '?';
      const res = await server.api.get(`${path}${sep}limit=${limit}${cursor === undefined ? '' : `&cursor=${cursor}`}`);
      expect(res.status, res.text).toBe(200);
      ids.push(...res.body.data.map((item: any) => String(item.id ?? item.message_id ?? item.seq)));
      totals.push(res.body.meta.total);
      cursor = res.body.meta.next_cursor;
      pages += 1;
    } while (cursor !== undefined && pages < 20);
    return { ids, totals, pages };
  }

  /** The same list read at once by offset: what the cursor walk must match. */
  async function whole(path: string): Promise<string[]> {
    const sep = path.includes('?') ? '&' : '?';
    const res = await server.api.get(`${path}${sep}limit=500`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.meta.next_cursor).toBeUndefined();
    return res.body.data.map((item: any) => String(item.id ?? item.message_id ?? item.seq));
  }

  it('pages runs, tasks, events, audit entries, dead letters and inbox messages by cursor, in their list order', async () => {
    for (let i = 0; i < 7; i++) expect((await server.api.post(`/core${API}/tasks`, { title: `paged ${i}` })).status).toBe(201);
    const plan = await server.api.post(`${API}/coordination/plans`, {
      alias: 'paged-plan',
      steps: [{ id: 'w', type: 'wait', seconds: 3600 }],
    });
    expect(plan.status, plan.text).toBe(201);
    for (let i = 0; i < 7; i++) {
      expect((await server.api.post(`${API}/coordination/runs`, { plan_id: plan.body.data.id, input: { i } })).status).toBe(201);
    }
    for (let i = 0; i < 7; i++) {
      const sent = await server.api.post(`${API}/messaging/send`, { destination: 'paged-inbox', event_name: `m${i}`, priority: i % 3 });
      expect(sent.status, sent.text).toBe(201);
      const dead = await server.api.post(`${API}/messaging/send`, { destination: 'paged-dead', event_name: `d${i}`, max_deliveries: 1 });
      expect(dead.status, dead.text).toBe(201);
    }
    const worker = await server.agent('paged-dead');
    const received = await worker.get(`${API}/messaging/receive?agent_id=paged-dead&max=7`);
    for (const message of received.body.data.messages) {
      const rejected = await worker.post(`${API}/messaging/reject`, { message_id: message.message_id, reason: 'paging test' });
      expect(rejected.status, rejected.text).toBe(200);
    }

    for (const path of [
      `${API}/coordination/runs?plan_id=paged-plan`,
      `/core${API}/tasks`,
      `${API}/events?type=task.created`,
      `${API}/audit`,
      `${API}/messaging/dead-letters?agent_id=paged-dead`,
      `${API}/messaging/inboxes/paged-inbox/messages`,
    ]) {
      const expected = await whole(path);
      expect(expected.length, path).toBeGreaterThanOrEqual(7);
      const paged = await walk(path, 3);
      expect(paged.ids, path).toEqual(expected);
      expect(paged.pages, path).toBe(Math.ceil(expected.length / 3));
      expect(new Set(paged.totals), path).toEqual(new Set([expected.length]));
    }
  });

  it('answers 400 for a cursor it did not give, a cursor with an offset, and a cursor on a list that pages by offset only', async () => {
    const first = await server.api.get(`/core${API}/tasks?limit=1`);
    const cursor = first.body.meta.next_cursor as string;
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    for (const path of [
      `/core${API}/tasks?cursor=bm90LWEtY3Vyc29y`,
      `/core${API}/tasks?cursor=${cursor}&offset=2`,
      `/core${API}/tasks?cursor=has%20spaces`,
      // A cursor of another list: a task's id where an event's position goes.
      `${API}/events?cursor=${cursor}`,
    ]) {
      const res = await server.api.get(path);
      expect(res.status, path).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
    // A list without cursors does not take the parameter at all.
    expect((await server.api.get(`${API}/coordination/plans?cursor=${cursor}`)).status).toBe(400);
  });

  it(`counts a list exactly up to ${EXACT_TOTAL_BOUND} and marks a larger total as estimated`, async () => {
    const handle = openDatabase(server.database.options(1));
    try {
      await sql`
        with recursive n(i) as (select 1 union all select i + 1 from n where i < ${EXACT_TOTAL_BOUND + 500})
        insert into events (type, subject, actor, data, reason, readers, created_at)
        select 'routine.paused', 'bulk_' || i, 'admin', '{}', null, null, i from n`.execute(handle.db);
      await sql`analyze events`.execute(handle.db);
    } finally {
      await handle.close();
    }
    const big = await server.api.get(`${API}/events?type=routine.paused&limit=2`);
    expect(big.status, big.text).toBe(200);
    expect(big.body.meta.total_estimated).toBe(true);
    expect(big.body.meta.total).toBeGreaterThan(EXACT_TOTAL_BOUND);
    const next = await server.api.get(`${API}/events?type=routine.paused&limit=2&cursor=${big.body.meta.next_cursor}`);
    expect(next.body.data.map((e: any) => e.subject)).toEqual(['bulk_3', 'bulk_4']);
    const small = await server.api.get(`${API}/events?type=task.created&limit=2`);
    expect(small.body.meta.total_estimated).toBeUndefined();
  });
});
