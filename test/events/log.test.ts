import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { openStream } from './sse.js';

describeEachDialect('event log: list and stream', (dialect) => {
  const server = useServer(dialect, { env: { SWITCHBOARD_EVENT_KEEPALIVE_MS: '100', SWITCHBOARD_EVENT_STREAMS_PER_PRINCIPAL: '2' } });

  const events = async (query = '') => {
    const res = await server.api.get(`/api/v1/events${query ? `?${query}` : ''}`);
    expect(res.status, res.text).toBe(200);
    return res.body.data as { id: string; type: string; subject: string; actor: string; data: any; reason: string | null }[];
  };
  const last = async () => (await events('limit=500')).at(-1)?.id;

  it('lists events oldest first with ids increasing, filtered by type patterns, subject and after', async () => {
    const before = await last();
    const a = (await server.api.post('/core/api/v1/tasks', { title: 'a' })).body.data;
    const b = (await server.api.post('/core/api/v1/tasks', { title: 'b' })).body.data;
    await server.api.patch(`/core/api/v1/tasks/${a.id}`, { status: 'done' });
    const after = await events(before ? `after=${before}` : '');
    expect(after.map((e) => [e.type, e.subject])).toEqual([
      ['task.created', a.id],
      ['task.created', b.id],
      ['task.updated', a.id],
    ]);
    expect(after.map((e) => e.id)).toEqual(
      after
        .map((e) => e.id)
        .slice()
        .sort(),
    );
    expect(after[0]!.actor).toBe('admin');
    expect(after[0]!.data.task).toMatchObject({ id: a.id, title: 'a' });
    expect(after[2]!.data.changes).toEqual([{ action: 'status_changed', from: 'todo', to: 'done' }]);

    const query = before ? `after=${before}&` : '';
    expect((await events(`${query}type=task.updated`)).map((e) => e.subject)).toEqual([a.id]);
    expect((await events(`${query}type=task.*`)).length).toBe(3);
    expect((await events(`${query}type=task.>,run.>`)).length).toBe(3);
    expect((await events(`${query}type=run.*`)).length).toBe(0);
    expect((await events(`${query}subject=${b.id}`)).map((e) => e.type)).toEqual(['task.created']);
    expect((await events(`after=${after[1]!.id}`)).map((e) => e.id)).toEqual([after[2]!.id]);
  });

  it('refuses bad patterns and cursors with 400', async () => {
    for (const query of ['type=run.>.x', 'type=a..b', 'after=evt_nope', 'after=evt_zzzzzzzzzzzzz', 'limit=0']) {
      const res = await server.api.get(`/api/v1/events?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
  });

  it('streams live, sends keep-alive comments, and resumes after Last-Event-ID without gap or duplicate', async () => {
    const stream = await openStream(server.url, server.adminKey, { query: 'type=task.created' });
    try {
      expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const first = (await server.api.post('/core/api/v1/tasks', { title: 'live 1' })).body.data;
      const [event] = await stream.until(1);
      expect(event).toMatchObject({ type: 'task.created', subject: first.id });
      await stream.untilComments(2);
      expect(stream.comments).toContain('keep-alive');
    } finally {
      stream.close();
    }
    const resumedFrom = stream.events[0]!.id;
    const second = (await server.api.post('/core/api/v1/tasks', { title: 'live 2' })).body.data;
    const third = (await server.api.post('/core/api/v1/tasks', { title: 'live 3' })).body.data;
    const resumed = await openStream(server.url, server.adminKey, { query: 'type=task.created', lastEventId: resumedFrom });
    try {
      const got = await resumed.until(2);
      expect(got.map((e) => e.subject)).toEqual([second.id, third.id]);
      const fourth = (await server.api.post('/core/api/v1/tasks', { title: 'live 4' })).body.data;
      expect((await resumed.until(3)).map((e) => e.subject)).toEqual([second.id, third.id, fourth.id]);
    } finally {
      resumed.close();
    }
  });

  it('refuses a stream over the per-principal limit with 429 in the envelope, and frees the slot when a client goes', async () => {
    const one = await openStream(server.url, server.adminKey);
    const two = await openStream(server.url, server.adminKey);
    const refused = await server.api.get('/api/v1/events/stream');
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    one.close();
    two.close();
    // The slots come back once the server notices the clients went away.
    const again = await waitFor(async () => {
      const stream = await openStream(server.url, server.adminKey);
      return stream.status === 200 ? stream : undefined;
    });
    again.close();
  });

  it('needs credentials', async () => {
    expect((await server.api.get('/api/v1/events', { key: null })).status).toBe(401);
    expect((await server.api.get('/api/v1/events/stream', { key: null })).status).toBe(401);
  });
});
