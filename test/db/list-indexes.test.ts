import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AuditStore } from '../../src/audit/store.js';
import { RunStore } from '../../src/coordination/run-store.js';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { EventsStore } from '../../src/events/store.js';
import { autocommit } from '../../src/kernel/tx.js';
import { newMessageRow } from '../../src/messaging/message-rows.js';
import { MessagingStore } from '../../src/messaging/store.js';
import { InboxViewsStore } from '../../src/messaging/views-store.js';
import { TasksStore } from '../../src/tasks/store.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { planOf, QueryRecorder } from '../helpers/query-plans.js';

/**
 * Every filter of the runs, tasks, events, audit and dead-letter lists reads through an index
 * (on PostgreSQL with sequential scans priced out, so a missing index shows as a Seq Scan
 * instead of hiding behind a small table's cheap one).
 */
describeEachDialect('list filters read through an index', (dialect) => {
  let database: TestDatabase;
  let handle: DatabaseHandle;
  const queries = new QueryRecorder();
  let db: ReturnType<DatabaseHandle['db']['withPlugin']>;

  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    handle = openDatabase(database.options(1));
    await migrateToLatest(handle);
    if (dialect === 'postgres') await sql`set enable_seqscan = off`.execute(handle.db);
    db = handle.db.withPlugin(queries);
  });
  afterAll(async () => {
    await handle.close();
    await database.drop();
  });

  /** The plan of the page query (the first the store ran). */
  async function pageQueryPlan(read: () => Promise<unknown>): Promise<string> {
    queries.nodes = [];
    await read();
    return planOf(handle, dialect, queries.nodes[0]!);
  }

  const window = { limit: 50, offset: 0 };
  // A range filter may instead walk the list's own order (its primary key) and stop after the
  // page's matches: no sort, and few rows when matches are dense, as the recent ones are.
  const walk = (table: string) => [`sqlite_autoindex_${table}_1`, `${table}_pkey`];
  const cases: [string, () => Promise<unknown>, string[]][] = [
    [
      'runs of a plan',
      () => new RunStore(db, handle.caps).listRuns(autocommit, { planId: 'pln_1' }, window),
      ['runs_plan_id', 'runs_plan'],
    ],
    ['runs by status', () => new RunStore(db, handle.caps).listRuns(autocommit, { status: 'failed' }, window), ['runs_status']],
    [
      'runs of a plan by status',
      () => new RunStore(db, handle.caps).listRuns(autocommit, { planId: 'pln_1', status: 'failed' }, window),
      ['runs_plan'],
    ],
    [
      'runs started after',
      () => new RunStore(db, handle.caps).listRuns(autocommit, { startedAfter: 5 }, window),
      ['runs_started', ...walk('runs')],
    ],
    [
      'runs of a tag',
      () => new RunStore(db, handle.caps).listRuns(autocommit, { tag: 'nightly' }, window),
      ['run_tags_pk', 'sqlite_autoindex_run_tags_1'],
    ],
    [
      'runs by metadata',
      () => new RunStore(db, handle.caps).listRuns(autocommit, { metadata: { key: 'k', value: 'v' } }, window),
      ['run_metadata_key_value'],
    ],
    ['tasks of a project', () => new TasksStore(db, handle.caps).listTasks(autocommit, { project_id: 'prj_1' }, window), ['tasks_project']],
    ['tasks by status', () => new TasksStore(db, handle.caps).listTasks(autocommit, { status: 'open' } as never, window), ['tasks_status']],
    ['tasks of an assignee', () => new TasksStore(db, handle.caps).listTasks(autocommit, { assigned_to: 'a' }, window), ['tasks_assign']],
    [
      'tasks by priority',
      () => new TasksStore(db, handle.caps).listTasks(autocommit, { priority: 'high' } as never, window),
      ['tasks_priority'],
    ],
    [
      'blocked tasks',
      () => new TasksStore(db, handle.caps).listTasks(autocommit, { blocked: true }, window),
      ['tasks_open_dependencies', ...walk('tasks')],
    ],
    ['events of a type', () => new EventsStore(db, handle.caps).list(autocommit, { types: ['task.created'] }, window), ['events_type']],
    ['events of a subject', () => new EventsStore(db, handle.caps).list(autocommit, { subject: 'tsk_1' }, window), ['events_subject']],
    ['audit by actor', () => new AuditStore(db, handle.caps).list(autocommit, { actor: 'admin' }, window), ['audit_log_actor']],
    ['audit by action', () => new AuditStore(db, handle.caps).list(autocommit, { action: 'plan.delete' }, window), ['audit_log_action']],
    ['audit by resource', () => new AuditStore(db, handle.caps).list(autocommit, { resource_id: 'pln_1' }, window), ['audit_log_resource']],
    [
      'audit by outcome',
      () => new AuditStore(db, handle.caps).list(autocommit, { outcome: 'denied' } as never, window),
      ['audit_log_outcome'],
    ],
    ['audit by time', () => new AuditStore(db, handle.caps).list(autocommit, { from: 5 }, window), ['audit_log_at', ...walk('audit_log')]],
    ['dead letters', () => new InboxViewsStore(db, handle.caps).listDeadLetters(autocommit, undefined, window), ['messages_retention']],
    [
      "an inbox's dead letters",
      () => new InboxViewsStore(db, handle.caps).listDeadLetters(autocommit, 'agent-a', window),
      ['messages_inbox_time'],
    ],
    [
      "agents' last deliveries (the latency and trust strategies)",
      () => new InboxViewsStore(db, handle.caps).deliveryStats(autocommit, [{ agent_id: 'agent-a' }, { agent_id: 'agent-b' }], 100),
      ['message_deliveries_agent'],
    ],
    [
      "an agent's last deliveries of one capability",
      () => new InboxViewsStore(db, handle.caps).deliveryStats(autocommit, [{ agent_id: 'agent-a', capability: 'summarize' }], 100),
      ['message_deliveries_agent_capability'],
    ],
    [
      'messages held by their ordering key (the held gauge)',
      () => new InboxViewsStore(db, handle.caps).countHeldByOrderingKey(autocommit),
      ['messages_ordering'],
    ],
    [
      "an inbox's waiting messages",
      () => new InboxViewsStore(db, handle.caps).inboxMessages(autocommit, 'agent-a', false, 0, window),
      ['messages_inbox'],
    ],
  ];

  it.each(cases)('%s', async (_, read, indexes) => {
    const plan = await pageQueryPlan(read);
    expect(
      indexes.some((index) => plan.includes(index)),
      plan,
    ).toBe(true);
    if (dialect === 'postgres') expect(plan).not.toContain('Seq Scan');
    else {
      expect(plan).not.toMatch(/SCAN (runs|tasks|events|audit_log|messages)(?! USING)/);
      expect(plan).not.toContain('TEMP B-TREE');
    }
  });

  it("reads an inbox's messages in flight on messages_expiry and its oldest waiting on messages_inbox_time, never walking what waits", async () => {
    // An inbox of 3,000 waiting messages and 5 in flight beside another's 3,000, analyzed: what the planner weighs in a server.
    const store = new MessagingStore(handle.db, handle.caps);
    for (let chunk = 0; chunk < 12; chunk++) {
      // Another inbox's, sent before: walking every pending message in time order would pass them.
      const destination = chunk < 6 ? 'agent-other' : 'agent-ready';
      const rows = Array.from({ length: 500 }, (_, i) => {
        const n = chunk * 500 + i - 3000;
        return newMessageRow({
          ...{ id: `msg_ready_${n}`, source: 'admin', destination, event_name: 'e', payload: '{}' },
          ...{ delivery_semantic: 'at_least_once', visible_at: n < 5 ? 5000 : n, max_deliveries: 5, created_at: n },
        });
      });
      await store.insertMessages(autocommit, rows);
    }
    await sql`analyze`.execute(handle.db);
    queries.nodes = [];
    await new InboxViewsStore(db, handle.caps).readyInboxes(autocommit, 4000);
    expect(queries.nodes).toHaveLength(3);
    const [, inFlight, oldest] = await Promise.all(queries.nodes.map((node) => planOf(handle, dialect, node)));
    expect(inFlight).toContain('messages_expiry');
    expect(oldest).toContain('messages_inbox_time');
    for (const plan of [inFlight!, oldest!]) {
      if (dialect === 'postgres') expect(plan).not.toContain('Seq Scan on messages');
      // Grouping the few rows in flight by inbox may sort them; nothing sorts what waits.
      else expect(plan).not.toMatch(/SCAN messages(?! USING)|TEMP B-TREE FOR ORDER BY/);
    }
  });
});
