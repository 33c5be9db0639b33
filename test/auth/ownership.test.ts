import { Migrator, sql } from 'kysely';
import { expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { migrations } from '../../src/db/migrations/index.js';
import type { Api, ApiResponse } from '../helpers/api.js';
import { createTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer } from '../helpers/server.js';

const C = '/api/v1/coordination';
const A = 'owner-a';
const B = 'other-b';

/** One way of changing a shared object; `id` is a fresh object's, made for this change alone. */
type Change = (as: Api, id: string) => Promise<ApiResponse>;

interface Kind {
  type: string;
  /** Makes one with `as`; returns its response's data. */
  create(as: Api): Promise<{ id: string; created_by: string }>;
  changes: Record<string, Change>;
}

/** Ownership of shared objects (design §3): an agent changes only what it created; operators and admins change any. */
describeEachDialect('ownership of shared objects', (dialect) => {
  const server = useServer(dialect);
  let seq = 0;
  const unique = (name: string) => `${name}-${++seq}`;
  const clients = new Map<string, Api>();

  /** The agent's client, made once. */
  async function agent(id: string): Promise<Api> {
    if (!clients.has(id)) clients.set(id, await server.agent(id));
    return clients.get(id)!;
  }

  async function operator(): Promise<Api> {
    if (!clients.has('operator')) {
      const res = await server.api.post('/api/v1/auth/keys', { role: 'operator', name: 'ops' });
      expect(res.status, res.text).toBe(201);
      clients.set('operator', server.api.withKey(res.body.data.key));
    }
    return clients.get('operator')!;
  }

  async function made(res: Promise<ApiResponse>): Promise<{ id: string; created_by: string }> {
    const answer = await res;
    expect(answer.status, answer.text).toBe(201);
    return answer.body.data;
  }

  /** A plan whose runs wait at a human_approval step: cancelled while waiting, redriven once rejected. */
  let gatePlan: string | undefined;
  async function gate(): Promise<string> {
    gatePlan ??= (
      await made(server.api.post(`${C}/plans`, { alias: unique('gate'), steps: [{ id: 'gate', type: 'human_approval', prompt: 'ok?' }] }))
    ).id;
    return gatePlan;
  }

  const kinds: Kind[] = [
    {
      type: 'plan',
      create: (as) => made(as.post(`${C}/plans`, { alias: unique('plan'), steps: [{ id: 't', type: 'transform', output: {} }] })),
      changes: {
        replace: (as, id) =>
          as.put(`${C}/plans/${id}`, { alias: unique('replaced'), steps: [{ id: 't', type: 'transform', output: { v: 2 } }] }),
        delete: (as, id) => as.delete(`${C}/plans/${id}`),
      },
    },
    {
      type: 'trigger',
      create: async (as) =>
        made(as.post(`${C}/triggers`, { plan_id: await gate(), type: 'event', config: { topic: `never.${unique('t')}` } })),
      changes: {
        pause: (as, id) => as.patch(`${C}/triggers/${id}`, { enabled: false }),
        delete: (as, id) => as.delete(`${C}/triggers/${id}`),
      },
    },
    {
      type: 'run',
      create: async (as) => made(as.post(`${C}/runs`, { plan_id: await gate() })),
      changes: {
        cancel: (as, id) => as.post(`${C}/runs/${id}/cancel`, { reason: 'test' }),
        redrive: async (as, id) => {
          // A refused redrive leaves the run failed; only a waiting run is rejected (failed) first.
          if ((await server.api.get(`${C}/runs/${id}`)).body.data.status === 'waiting') {
            const rejected = await server.api.post(`${C}/runs/${id}/steps/gate/approve`, { approved: false });
            expect(rejected.body.data?.status, rejected.text).toBe('failed');
          }
          return as.post(`${C}/runs/${id}/redrive`);
        },
      },
    },
    {
      type: 'routine',
      create: (as) => made(as.post('/core/api/v1/routines', { name: unique('routine'), trigger_type: 'webhook', target_agent: 'worker' })),
      changes: {
        pause: (as, id) => as.patch(`/core/api/v1/routines/${id}`, { enabled: false }),
        'rotate token': (as, id) => as.post(`/core/api/v1/routines/${id}/rotate-token`),
        delete: (as, id) => as.delete(`/core/api/v1/routines/${id}`),
        'delete an execution': async (as, id) => {
          const execution = await server.api.post(`/core/api/v1/routines/${id}/trigger`);
          expect(execution.status, execution.text).toBe(202);
          return as.delete(`/core/api/v1/routines/executions/${execution.body.data.id}`);
        },
      },
    },
    {
      type: 'project',
      create: (as) => made(as.post('/core/api/v1/projects', { name: unique('project') })),
      changes: {
        replace: (as, id) => as.put(`/core/api/v1/projects/${id}`, { name: unique('renamed') }),
        delete: (as, id) => as.delete(`/core/api/v1/projects/${id}`),
      },
    },
    {
      type: 'task',
      create: (as) => made(as.post('/core/api/v1/tasks', { title: unique('task') })),
      changes: taskChanges(),
    },
  ];

  function taskChanges(): Record<string, Change> {
    return {
      update: (as, id) => as.patch(`/core/api/v1/tasks/${id}`, { title: unique('retitled'), priority: 'high' }),
      delete: (as, id) => as.delete(`/core/api/v1/tasks/${id}`),
      'add a dependency': async (as, id) => {
        const upstream = await made(server.api.post('/core/api/v1/tasks', { title: unique('upstream') }));
        return as.post(`/core/api/v1/tasks/${id}/dependencies`, { depends_on: upstream.id });
      },
      'remove a dependency': async (as, id) => {
        const upstream = await made(server.api.post('/core/api/v1/tasks', { title: unique('upstream') }));
        expect((await server.api.post(`/core/api/v1/tasks/${id}/dependencies`, { depends_on: upstream.id })).status).toBe(201);
        return as.delete(`/core/api/v1/tasks/${id}/dependencies/${upstream.id}`);
      },
    };
  }

  const cases = kinds.flatMap((kind) => Object.entries(kind.changes).map(([name, change]) => ({ kind, name, change })));

  it.each(cases)('$kind.type: $name — only its creator among agents; operators and admins any', async ({ kind, change }) => {
    const [owner, other, ops] = [await agent(A), await agent(B), await operator()];

    const mine = await kind.create(owner);
    expect(mine.created_by).toBe(A);
    const denied = await change(other, mine.id);
    expect(denied.status, denied.text).toBe(403);
    expect(denied.body.error).toMatchObject({ code: 'forbidden' });
    expect(denied.body.error.message).toContain(
      `${kind.type} '${mine.id}' was created by '${A}'; agent '${B}' may change only what it created`,
    );
    // The refusal changed nothing: the owner's own change still finds the object as it was.
    const allowed = await change(owner, mine.id);
    expect(allowed.status, allowed.text).toBeLessThan(300);

    for (const platform of [ops, server.api]) {
      const res = await change(platform, (await kind.create(owner)).id);
      expect(res.status, res.text).toBeLessThan(300);
    }

    // Made with the admin key: 'admin', as rows of unknown origin are; no agent changes it.
    const platformOwned = await kind.create(server.api);
    expect(platformOwned.created_by).toBe('admin');
    expect((await change(owner, platformOwned.id)).status).toBe(403);
    expect((await change(ops, platformOwned.id)).status).toBeLessThan(300);
  });

  it.each(Object.entries(taskChanges()))('task: %s — also by the agent it is assigned to, not by others', async (_name, change) => {
    const [owner, assignee, third] = [await agent(A), await agent(B), await agent('third-c')];
    const assigned = await made(owner.post('/core/api/v1/tasks', { title: unique('assigned'), assigned_to: B }));
    const denied = await change(third, assigned.id);
    expect(denied.status, denied.text).toBe(403);
    expect(denied.body.error.message).toContain('may change only what it created or is assigned to');
    const res = await change(assignee, assigned.id);
    expect(res.status, res.text).toBeLessThan(300);
  });

  it("an agent still reads and uses others' objects: runs their plans, fires their routines, claims and comments on their tasks", async () => {
    const [owner, other] = [await agent(A), await agent(B)];
    const plan = await made(owner.post(`${C}/plans`, { alias: unique('shared'), steps: [{ id: 't', type: 'transform', output: {} }] }));
    expect((await other.get(`${C}/plans/${plan.id}`)).status).toBe(200);
    const run = await other.post(`${C}/runs`, { plan_id: plan.id });
    expect(run.status, run.text).toBe(201);
    expect(run.body.data.created_by).toBe(B);
    const trigger = await other.post(`${C}/triggers`, { plan_id: plan.id, type: 'event', config: { topic: `never.${unique('t')}` } });
    expect(trigger.status, trigger.text).toBe(201);
    expect(trigger.body.data.created_by).toBe(B);

    const routine = await made(
      owner.post('/core/api/v1/routines', { name: unique('routine'), trigger_type: 'webhook', target_agent: 'worker' }),
    );
    expect((await other.post(`/core/api/v1/routines/${routine.id}/trigger`)).status).toBe(202);

    const project = await made(owner.post('/core/api/v1/projects', { name: unique('project') }));
    const task = await made(owner.post('/core/api/v1/tasks', { title: unique('open'), project_id: project.id }));
    expect((await other.post(`/core/api/v1/tasks/${task.id}/comments`, { content: 'on it' })).status).toBe(201);
    const claimed = await other.post(`/core/api/v1/tasks/${task.id}/claim`);
    expect(claimed.status, claimed.text).toBe(200);
    // Claimed, the task is B's to change, though A created it.
    expect((await other.patch(`/core/api/v1/tasks/${task.id}`, { status: 'done' })).status).toBe(200);
  });

  it('webhooks record who registered them', async () => {
    const ops = await operator();
    const me = (await ops.get('/api/v1/auth/whoami')).body.data;
    const res = await ops.post('/api/v1/webhooks', { url: 'http://127.0.0.1:9/hook', types: ['task.created'] });
    expect(res.status, res.text).toBe(201);
    expect(res.body.data.created_by).toBe(me.actor);
    expect((await server.api.get(`/api/v1/webhooks/${res.body.data.id}`)).body.data.created_by).toBe(me.actor);
  });
});

describeEachDialect('ownership after an upgrade', (dialect) => {
  it('keeps the creators recorded before; webhooks from before are admin-owned', async () => {
    const database = await createTestDatabase(dialect);
    try {
      await seedBeforeOwnership(database.options(1));
      const server = await startServer(dialect, { database });
      try {
        const [owner, other] = [await server.agent(A), await server.agent(B)];
        const plan = (await owner.get(`${C}/plans/pln_before`)).body.data;
        expect(plan.created_by).toBe(A);
        expect((await other.delete(`${C}/plans/pln_before`)).status).toBe(403);
        const replaced = await owner.put(`${C}/plans/pln_before`, {
          alias: 'before',
          steps: [{ id: 't', type: 'transform', output: { v: 2 } }],
        });
        expect(replaced.status, replaced.text).toBe(200);
        expect(replaced.body.data).toMatchObject({ version: 2, created_by: A });
        const webhook = await server.api.get('/api/v1/webhooks/whk_before');
        expect(webhook.status, webhook.text).toBe(200);
        expect(webhook.body.data.created_by).toBe('admin');
      } finally {
        await server.close();
      }
    } finally {
      await database.drop();
    }
  });
});

/** A database migrated up to, not including, 0025-ownership, with a plan agent A made and a webhook. */
async function seedBeforeOwnership(options: Parameters<typeof openDatabase>[0]): Promise<void> {
  const handle = openDatabase(options);
  try {
    const earlier = Object.entries(migrations).filter(([name]) => name < '0025-ownership');
    const migrator = new Migrator({
      db: handle.db,
      provider: {
        getMigrations: async () => Object.fromEntries(earlier.map(([name, m]) => [name, { up: (db) => m.up(db, handle.caps) }])),
      },
      // As src/db/migrate.ts names them, so that the server applies only what is left.
      migrationTableName: 'switchboard_migrations',
      migrationLockTableName: 'switchboard_migrations_lock',
    });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
    const now = Date.now();
    await handle.db
      .insertInto('plans')
      .values({ id: 'pln_before', alias: 'before', version: 1, created_by: A, created_at: now, updated_at: now })
      .execute();
    await handle.db
      .insertInto('plan_versions')
      .values({
        plan_id: 'pln_before',
        version: 1,
        alias: 'before',
        definition: JSON.stringify({ steps: [{ id: 't', type: 'transform', output: {} }] }),
        created_by: A,
        created_at: now,
      })
      .execute();
    await sql`insert into webhooks (id, url, types, description, secret, enabled, disabled_reason, cursor, failing_since, created_at, updated_at)
      values ('whk_before', 'http://127.0.0.1:9/hook', '["task.created"]', null, 'whsec_x', 1, null, 0, null, ${now}, ${now})`.execute(
      handle.db,
    );
  } finally {
    await handle.close();
  }
}
