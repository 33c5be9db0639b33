import { Type, type Static } from '@sinclair/typebox';
import { PageQuery, Timestamp } from '../http/schemas.js';

export const ClusterNode = Type.Object({
  id: Type.String({ description: 'node_…, new at each start of a server' }),
  version: Type.String({ description: "The server's version" }),
  host: Type.String({ description: "The machine's host name" }),
  pid: Type.Integer(),
  started_at: Timestamp,
  last_seen_at: Timestamp,
  status: Type.Union([Type.Literal('up'), Type.Literal('down')], {
    description: 'down after a clean shutdown, or when the node has not heartbeated (every 5 s) for 30 s',
  }),
}, { title: 'ClusterNode' });
export type ClusterNode = Static<typeof ClusterNode>;

export const ListNodesQuery = Type.Object({ ...PageQuery.properties }, { additionalProperties: false });
