import { Type, type TObject } from '@sinclair/typebox';
import { LookupEnvelope, LookupQuery, SearchBody, SearchEnvelope } from '../../discovery/schemas.js';
import { define, READ, toolInput, type GroupTool, type ToolServices } from './define.js';

/** A route's data with the named fields of its meta beside it: what the service returns together. */
function dataWithMeta(envelope: TObject, keys: string[]): TObject {
  const { data, meta } = envelope.properties as { data: TObject; meta: TObject };
  return Type.Object({ ...data.properties, ...Object.fromEntries(keys.map((key) => [key, meta.properties[key]!])) });
}

/** Discovery: who can do what. */
export function discoveryTools({ discovery }: ToolServices): GroupTool[] {
  return [
    define({
      name: 'find_agents',
      permission: 'discovery:read',
      title: 'Find agents',
      description:
        "Find agents by capability (exact, or a 'text.*' wildcard) and group, one entry per agent with its health and load, ordered by a routing strategy (the first is the one to send to); unhealthy agents only with include_unhealthy.",
      input: toolInput(LookupQuery, { include_unhealthy: 'true: also agents whose heartbeat is late or missing; default false' }),
      output: dataWithMeta(LookupEnvelope, ['strategy', 'total']),
      annotations: READ,
      run: (query) => discovery.lookupAgents(query),
    }),
    define({
      name: 'search_capabilities',
      permission: 'discovery:read',
      title: 'Search capabilities',
      description: 'Find capabilities by a natural-language description of the work, best first, with a similarity score from 0 to 1.',
      input: toolInput(SearchBody, {
        top_k: 'Most results to return (1 to 100); default 10',
        min_score: 'Only results at least this similar (0 to 1); default 0',
      }),
      output: dataWithMeta(SearchEnvelope, ['ranker']),
      annotations: READ,
      run: (body) => discovery.searchCapabilities(body),
    }),
  ];
}
