import { Type, type Static } from '@sinclair/typebox';
import { PageQuery, Timestamp } from '../http/schemas.js';

export const WorkerStatus = Type.Object(
  {
    name: Type.String({ description: 'The worker (the `worker` label of its series in /metrics)' }),
    runs: Type.Integer({ description: 'Passes finished since the node started, failed ones included' }),
    failures: Type.Integer({ description: 'Passes that failed (threw) since the node started' }),
    consecutive_failures: Type.Integer({
      description: 'Passes that failed since the last one that succeeded; from 3, /readyz names the worker',
    }),
    last_run_at: Type.Union([Timestamp, Type.Null()], { description: 'When the last finished pass started; null before the first' }),
    last_duration_ms: Type.Union([Type.Number(), Type.Null()], {
      description: 'How long the last finished pass took, in milliseconds (to the microsecond)',
    }),
    running_since: Type.Union([Timestamp, Type.Null()], {
      description: 'When the pass under way started; null between passes (a pass that hangs keeps it old)',
    }),
    last_error: Type.Union([Type.Object({ message: Type.String(), at: Timestamp }), Type.Null()], {
      description:
        'The last pass that failed: its error and when; kept after later passes succeed (consecutive_failures says whether it still fails)',
    }),
  },
  { title: 'WorkerStatus' },
);
export type WorkerStatus = Static<typeof WorkerStatus>;

export const ClusterNode = Type.Object(
  {
    id: Type.String({ description: 'node_…, new at each start of a server' }),
    version: Type.String({ description: "The server's version" }),
    host: Type.String({ description: "The machine's host name" }),
    pid: Type.Integer(),
    started_at: Timestamp,
    last_seen_at: Timestamp,
    status: Type.Union([Type.Literal('up'), Type.Literal('down')], {
      description: 'down after a clean shutdown, or when the node has not heartbeated (every 5 s) for 30 s',
    }),
    workers: Type.Optional(
      Type.Array(WorkerStatus, {
        description:
          "Only on the entry of the node that answered: its background workers, in the order they start (another node's are in its own answer, and in every node's /metrics)",
      }),
    ),
  },
  { title: 'ClusterNode' },
);
export type ClusterNode = Static<typeof ClusterNode>;

export const ListNodesQuery = Type.Object({ ...PageQuery.properties }, { additionalProperties: false });
