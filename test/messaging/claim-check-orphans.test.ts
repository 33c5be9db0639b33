import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { acknowledge, receive } from '../helpers/agent.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const M = '/api/v1/messaging';
const HOUR = 3_600_000;
/** Over the default inline limit (256 KiB) once JSON-encoded. */
const big = (seed: string) => ({ text: seed.repeat(300 * 1024) });

/**
 * Offloaded payloads whose send failed, or never came (the server stopped in between): nothing
 * holds them, and they go, at once or by retention after a grace period; an artifact a sender
 * made itself never does. A message and the hold of its payload commit together.
 */
describeEachDialect('messaging: offloaded payloads nothing holds', (dialect) => {
  const clock = new FakeClock();
  const server = useServer(dialect, { clock });
  const db = () => server.app.platform.database.db;

  /** The payload artifacts the server offloaded for `owner`. */
  const offloads = async (owner: string) =>
    (await db().selectFrom('artifacts').select('id').where('owner', '=', owner).where('name', '=', 'payload.json').execute())
      .map((row) => row.id)
      .sort();
  const retention = async (ms: number) => {
    clock.advance(ms);
    while ((await server.app.retention.pass())?.more) {
      // a full batch: another pass
    }
  };

  it('deletes what a failed send, a replay or a refused acknowledgement offloaded; keeps what the sender gave', async () => {
    const a = await server.agent('or-a');
    const b = await server.agent('or-b');
    const threadless = await a.post(`${M}/send`, { destination: 'or-b', event_name: 'big', payload: big('u'), thread_id: 'thr_missing' });
    expect(threadless.status, threadless.text).toBe(404);
    // One message offloaded, the next refused.
    const batch = await a.post(`${M}/send-batch`, {
      messages: [
        { destination: 'or-b', event_name: 'one', payload: big('1') },
        { destination: 'or-b', event_name: 'two', payload_ref: { artifact_id: 'art_missing' } },
      ],
    });
    expect(batch.status, batch.text).toBe(404);
    expect(await offloads('or-a')).toEqual([]);

    // A replay's payload is the first send's: its own offload goes.
    const keyed = { destination: 'or-b', event_name: 'keyed', payload: big('k'), idempotency_key: 'or-k' };
    const first = await a.post(`${M}/send`, keyed);
    expect(first.status).toBe(201);
    const replay = await a.post(`${M}/send`, keyed);
    expect(replay.body.data.message_id).toBe(first.body.data.message_id);
    const kept = await offloads('or-a');
    expect(kept).toHaveLength(1);

    // An output offloaded for an acknowledgement that conflicts.
    const [message] = await receive(b, 'or-b', 0, 1);
    await acknowledge(b, message!.message_id);
    const again = await b.post(`${M}/acknowledge`, { message_id: message!.message_id, output: big('o') });
    expect(again.status, again.text).toBe(409);
    expect(await offloads('or-b')).toEqual([]);

    // The sender's own artifact, marked as a claim check, sent by reference in a send that fails.
    const own = await a.post('/api/v1/artifacts/snippets', { name: 'own.json', content: { x: 1 }, metadata: { claim_check: true } });
    expect(own.status, own.text).toBe(201);
    const ownId = own.body.data.id as string;
    const refused = await a.post(`${M}/send`, {
      destination: 'or-b',
      event_name: 'ref',
      payload_ref: { artifact_id: ownId },
      thread_id: 'thr_missing',
    });
    expect(refused.status, refused.text).toBe(404);
    await retention(2 * HOUR);
    expect((await a.get(`/api/v1/artifacts/${ownId}`)).status).toBe(200);
    expect(await offloads('or-a')).toEqual(kept);
  });

  it('retention deletes an offload nothing holds once the grace period is over, and only that', async () => {
    const a = await server.agent('gr-a');
    await server.agent('gr-b');
    for (const seed of ['x', 'y'])
      expect((await a.post(`${M}/send`, { destination: 'gr-b', event_name: 'big', payload: big(seed) })).status).toBe(201);
    const rows = await db().selectFrom('messages').select(['id', 'payload_ref']).where('destination', '=', 'gr-b').orderBy('seq').execute();
    const [orphan, kept] = rows.map((row) => (JSON.parse(row.payload_ref!) as { artifact_id: string }).artifact_id);
    // What the server stopping between the offload and the send leaves: the artifact, no message, no hold.
    await db().deleteFrom('artifact_holds').where('artifact_id', '=', orphan!).execute();
    await db().deleteFrom('messages').where('id', '=', rows[0]!.id).execute();
    const own = await a.post('/api/v1/artifacts/snippets', { name: 'payload.json', content: { y: 1 }, metadata: { claim_check: true } });
    expect(own.status, own.text).toBe(201);

    await retention(HOUR / 2);
    expect((await server.api.get(`/api/v1/artifacts/${orphan}`)).status).toBe(200);
    await retention(HOUR);
    expect((await server.api.get(`/api/v1/artifacts/${orphan}`)).status).toBe(404);
    expect((await server.api.get(`/api/v1/artifacts/${kept}`)).status).toBe(200);
    expect((await server.api.get(`/api/v1/artifacts/${own.body.data.id}`)).status).toBe(200);
  });

  it('commits a message with the hold of its payload or not at all; lone sends of the same turn still go', async () => {
    const a = await server.agent('tx-a');
    const b = await server.agent('tx-b');
    // The hold's insert fails: the message must not be sent without it.
    if (dialect === 'postgres') {
      await sql`CREATE FUNCTION refuse_holds() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'holds refused'; END $$`.execute(
        db(),
      );
      await sql`CREATE TRIGGER refuse_holds BEFORE INSERT ON artifact_holds FOR EACH ROW EXECUTE FUNCTION refuse_holds()`.execute(db());
    } else
      await sql`CREATE TRIGGER refuse_holds BEFORE INSERT ON artifact_holds BEGIN SELECT RAISE(ABORT, 'holds refused'); END`.execute(db());
    try {
      const [large, small] = await Promise.all([
        a.post(`${M}/send`, { destination: 'tx-b', event_name: 'large', payload: big('t') }),
        a.post(`${M}/send`, { destination: 'tx-b', event_name: 'small', payload: { n: 1 } }),
      ]);
      expect(large.status).toBe(500);
      expect(small.status, small.text).toBe(201);
    } finally {
      await sql`DROP TRIGGER refuse_holds${sql.raw(dialect === 'postgres' ? ' ON artifact_holds' : '')}`.execute(db());
      if (dialect === 'postgres') await sql`DROP FUNCTION refuse_holds()`.execute(db());
    }
    const received = await receive(b, 'tx-b', 0, 10);
    expect(received.map((m) => m.event_name)).toEqual(['small']);
    expect(await offloads('tx-a')).toEqual([]);
  });
});
