import { Type, type Static, type TString } from '@sinclair/typebox';
import { AGENT_ID_PATTERN, CursorPageQuery, PageQuery, Timestamp } from '../http/schemas.js';

/**
 * The tasks domain's schemas, written once: they validate HTTP requests, type the
 * service, document the OpenAPI and will describe the MCP tools (create_task, get_task,
 * list_tasks, update_task, delete_task, add_comment, list_projects), so every field says what it is.
 */

// `type: [string, null]` and `enum` rather than unions (anyOf): the response serializer
// validates each anyOf branch per value, and request coercion would turn null into "" in a
// string branch tried first.
const Nullable = (schema: TString, description: string) => Type.Unsafe<string | null>({ ...schema, type: ['string', 'null'], description });
const Enum = <T extends string>(values: readonly T[], description: string) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], description });

export const BUILT_IN_STATUSES = ['todo', 'in_progress', 'done'] as const;
export const DONE = 'done';
export const PRIORITIES = ['none', 'low', 'medium', 'high', 'urgent'] as const;

const ProjectName = Type.String({ minLength: 1, maxLength: 200, description: 'Project name' });
const ProjectDescription = Type.String({ maxLength: 10_000, description: 'What the project is about' });
export const ProjectId = Type.String({ minLength: 1, maxLength: 100, description: 'Project id (prj_…)' });
export const TaskId = Type.String({ minLength: 1, maxLength: 100, description: 'Task id (tsk_…)' });

export const Status = Type.String({
  pattern: '^[a-z][a-z0-9_-]{0,63}$',
  description: "Task status: 'todo', 'in_progress', 'done' (built in) or a custom lowercase slug (letters, digits, _ and -)",
});
export const Priority = Enum(PRIORITIES, 'Priority: none (default), low, medium, high or urgent');
const Title = Type.String({ minLength: 1, maxLength: 500, description: 'Task title' });
const TaskDescription = Type.String({ maxLength: 100_000, description: 'Longer description of the work (Markdown welcome)' });
const Assignee = Type.String({ pattern: AGENT_ID_PATTERN, description: 'Agent the task is assigned to' });

// ---- projects ----

export const ProjectBody = Type.Object(
  {
    name: ProjectName,
    description: Type.Optional(ProjectDescription),
  },
  { additionalProperties: false },
);
export type ProjectBody = Static<typeof ProjectBody>;

export const Project = Type.Object(
  {
    id: Type.String({ description: 'Project id (prj_…)' }),
    name: Type.String({ description: 'Project name' }),
    description: Nullable(Type.String(), 'What the project is about; null when not set'),
    created_by: Type.String({ description: 'Actor that created the project' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'Project' },
);
export type Project = Static<typeof Project>;

export const ProjectParams = Type.Object({ id: ProjectId });
export const DeleteProjectQuery = Type.Object({
  cascade: Type.Optional(
    Type.Boolean({
      default: false,
      description:
        'true deletes the project with its tasks, their comments, dependencies and activity; otherwise a project with tasks is a 409',
    }),
  ),
});
export const ListProjectsQuery = PageQuery;

// ---- tasks ----

export const CreateTaskBody = Type.Object(
  {
    title: Title,
    description: Type.Optional(TaskDescription),
    status: Type.Optional(Type.Intersect([Status], { description: 'Initial status; default todo' })),
    project_id: Type.Optional(Type.Intersect([ProjectId], { description: 'Owning project; must exist' })),
    assigned_to: Type.Optional(Assignee),
    priority: Type.Optional(Priority),
    depends_on: Type.Optional(
      Type.Array(TaskId, {
        maxItems: 100,
        uniqueItems: true,
        description: 'Ids of existing tasks this task depends on (it is blocked until they are all done)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CreateTaskBody = Static<typeof CreateTaskBody>;

export const UpdateTaskBody = Type.Object(
  {
    title: Type.Optional(Title),
    description: Type.Optional(Nullable(TaskDescription, 'New description; null clears it')),
    status: Type.Optional(Status),
    project_id: Type.Optional(Nullable(ProjectId, 'Move the task to this project (must exist); null detaches it')),
    assigned_to: Type.Optional(Nullable(Assignee, 'Assign the task to this agent; null unassigns it')),
    priority: Type.Optional(Priority),
  },
  { additionalProperties: false, description: 'The fields to change; the others keep their value' },
);
export type UpdateTaskBody = Static<typeof UpdateTaskBody>;

export const Task = Type.Object(
  {
    id: Type.String({ description: 'Task id (tsk_…)' }),
    project_id: Nullable(Type.String(), 'Owning project, or null'),
    title: Type.String({ description: 'Task title' }),
    description: Nullable(Type.String(), 'Description, or null'),
    status: Type.String({ description: 'todo, in_progress, done or a custom status' }),
    assigned_to: Nullable(Type.String(), 'Agent the task is assigned to, or null'),
    priority: Priority,
    created_by: Type.String({ description: 'Actor that created the task' }),
    created_at: Timestamp,
    updated_at: Timestamp,
    depends_on: Type.Array(Type.String(), { description: 'Ids of the tasks this task depends on, oldest dependency first' }),
    blocked: Type.Boolean({ description: 'true while any task in depends_on is not done' }),
  },
  { title: 'Task' },
);
export type Task = Static<typeof Task>;

export const ListTasksQuery = Type.Composite([
  CursorPageQuery,
  Type.Object({
    status: Type.Optional(Status),
    project_id: Type.Optional(ProjectId),
    assigned_to: Type.Optional(Assignee),
    priority: Type.Optional(Priority),
    blocked: Type.Optional(Type.Boolean({ description: 'true: only blocked tasks; false: only ready ones' })),
  }),
]);
export type TaskFilter = Omit<Static<typeof ListTasksQuery>, 'limit' | 'offset' | 'cursor'>;

export const TaskParams = Type.Object({ id: TaskId });

// ---- claims ----

export const ClaimBody = Type.Union([
  Type.Object(
    {
      expected_status: Type.Optional(
        Type.Intersect([Status], {
          description: 'Claim only while the task has this status (409 otherwise); without it any status but done may be claimed',
        }),
      ),
      agent_id: Type.Optional(
        Type.String({
          pattern: AGENT_ID_PATTERN,
          description: 'The claiming agent; defaults to the caller (an agent may only name itself, an admin key must name one)',
        }),
      ),
    },
    { additionalProperties: false },
  ),
  Type.Null(),
]);
export type ClaimBody = Static<typeof ClaimBody>;

// ---- dependencies ----

export const AddDependencyBody = Type.Object(
  { depends_on: Type.Intersect([TaskId], { description: 'Id of the task depended upon (the path task is the dependent one)' }) },
  { additionalProperties: false },
);

export const Dependency = Type.Object(
  {
    id: Type.String({ description: 'Dependency id (dep_…), used to remove it' }),
    task_id: Type.String({ description: 'The dependent task' }),
    depends_on: Type.String({ description: 'The task depended upon' }),
    created_by: Type.String({ description: 'Actor that added the dependency' }),
    created_at: Timestamp,
  },
  { title: 'TaskDependency' },
);
export type Dependency = Static<typeof Dependency>;

export const DependencyParams = Type.Object({
  id: TaskId,
  dep_id: Type.String({
    minLength: 1,
    maxLength: 100,
    description: 'The dependency id (dep_…); the id of the task depended upon (tsk_…) is accepted too',
  }),
});

// ---- comments ----

export const AddCommentBody = Type.Object(
  { content: Type.String({ minLength: 1, maxLength: 100_000, description: 'Comment text' }) },
  { additionalProperties: false },
);

export const Comment = Type.Object(
  {
    id: Type.String({ description: 'Comment id (cmt_…)' }),
    task_id: Type.String({ description: 'The task commented on' }),
    author: Type.String({ description: 'Actor that wrote the comment' }),
    content: Type.String({ description: 'Comment text' }),
    created_at: Timestamp,
  },
  { title: 'TaskComment' },
);
export type Comment = Static<typeof Comment>;

// ---- activity ----

export const ACTIVITY_ACTIONS = [
  'created',
  'status_changed',
  'assigned',
  'priority_changed',
  'title_changed',
  'description_changed',
  'project_changed',
  'comment_added',
  'dependency_added',
  'dependency_removed',
  'claimed',
  'released',
] as const;
export type ActivityAction = (typeof ACTIVITY_ACTIONS)[number];

export const Activity = Type.Object(
  {
    id: Type.String({ description: 'Activity entry id (act_…)' }),
    task_id: Type.String({ description: 'The task that changed' }),
    actor: Type.String({ description: 'Agent (or admin) that made the change' }),
    action: Enum(ACTIVITY_ACTIONS, 'What changed'),
    from: Nullable(Type.String(), 'Previous value (e.g. the old status), or null'),
    to: Nullable(Type.String(), 'New value (e.g. the new status, the comment or dependency id), or null'),
    created_at: Timestamp,
  },
  { title: 'TaskActivity' },
);
export type Activity = Static<typeof Activity>;
