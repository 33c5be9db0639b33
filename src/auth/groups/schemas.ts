import { Type, type Static } from '@sinclair/typebox';
import { GROUP_PATTERN } from '../../discovery/schemas.js';
import { AgentId, Timestamp } from '../../http/schemas.js';

/** Group names follow discovery's rule, so one name can route to agents and open shares alike. */
const GroupName = Type.String({ pattern: GROUP_PATTERN, description: 'Group name' });

export const GroupParams = Type.Object({ group: GroupName });
export const MemberParams = Type.Object({ group: GroupName, agent_id: AgentId });

export const Membership = Type.Object(
  {
    group: Type.String(),
    agent_id: Type.String(),
    granted_by: Type.String({ description: 'The admin that granted it' }),
    granted_at: Timestamp,
  },
  { title: 'AccessGroupMembership' },
);
export type Membership = Static<typeof Membership>;

export const AccessGroup = Type.Object(
  {
    group: Type.String(),
    members: Type.Array(Type.String(), { description: 'Agent ids, sorted' }),
  },
  { title: 'AccessGroup' },
);
export type AccessGroup = Static<typeof AccessGroup>;

export const MembershipRemoved = Type.Object(
  {
    group: Type.String(),
    agent_id: Type.String(),
    deleted: Type.Literal(true),
  },
  { title: 'AccessGroupMembershipRemoved' },
);
