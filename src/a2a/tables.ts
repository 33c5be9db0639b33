/** Where an A2A task is; A2A's names (TaskState) are given by the service. */
export type A2aTaskState = 'submitted' | 'working' | 'completed' | 'failed' | 'canceled';

export interface A2aTasksTable {
  id: string;
  context_id: string;
  agent_id: string;
  /** The inbox message the task is (messages.id, origin `a2a_task` / task id). */
  message_id: string;
  /** Who sent it: an agent id, or an admin key's actor. */
  requester: string;
  /** The A2A message that started the task (JSON, A2A's JSON form). */
  request: string;
  state: A2aTaskState;
  /** The acknowledgement's output (JSON) once completed. */
  output: string | null;
  /** Why it failed (the dead letter's reason). */
  reason: string | null;
  created_at: number;
  updated_at: number;
}

/** The a2a tables as Kysely sees them; db/schema.ts joins every domain's into one Database. */
export interface A2aTables {
  a2a_tasks: A2aTasksTable;
}
