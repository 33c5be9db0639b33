import { Type, type Static, type TObject } from '@sinclair/typebox';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import type { Logger } from 'pino';
import type { Principal } from '../auth/index.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, page, PageQuery } from '../http/schemas.js';
import { AppError } from '../kernel/errors.js';
import { callerOf, type CoordinationService } from '../coordination/index.js';
import { ApproveBody, InputBody, RunStepParams } from '../coordination/schemas.js';
import type { RoutinesService } from '../routines/index.js';
import { CreateRoutineBody, ListRoutinesQuery, RoutineParams, TriggerBody, UpdateRoutineBody } from '../routines/schemas.js';
import type { TasksService } from '../tasks/index.js';
import { AddCommentBody, CreateTaskBody, ListTasksQuery, TaskParams, UpdateTaskBody } from '../tasks/schemas.js';

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
}

/** A tool's reply before it becomes an MCP result: always a JSON object (structuredContent). */
type ToolOutput = Record<string, unknown>;

interface ToolDefinition<S extends TObject> {
  name: string;
  description: string;
  input: S;
  annotations: ToolAnnotations;
  run(args: Static<S>, principal: Principal): Promise<ToolOutput>;
}

export interface Tool {
  name: string;
  description: string;
  inputSchema: TObject;
  annotations: ToolAnnotations;
  call(args: unknown, principal: Principal): Promise<ToolOutput>;
}

export interface ToolResult {
  [key: string]: unknown;
  content: { type: 'text'; text: string }[];
  structuredContent: ToolOutput;
  isError?: boolean;
}

const READ: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true };
const CREATE: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false };
const UPDATE: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true };
const DELETE: ToolAnnotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: true };
/** A decision moves the run on (a rejection fails it) and is made once: a second call is refused. */
const DECIDE: ToolAnnotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: false };

// Arguments arrive as JSON, like HTTP bodies: validated the same way (no coercion, unknown
// fields rejected by the schemas themselves, defaults applied).
const ajv = addFormats.default(new Ajv.default({ removeAdditional: false, useDefaults: true, allErrors: true, strict: false }));

/** Descriptions for the arguments whose route schemas carry none (path and query parameters). */
const ARGUMENT_DESCRIPTIONS: Record<string, string> = {
  limit: `Page size, 1 to ${MAX_PAGE_SIZE}; default ${DEFAULT_PAGE_SIZE}`,
  offset: 'Number of items to skip; default 0',
};

/**
 * A tool's input schema: the route's own TypeBox schema, closed to unknown arguments (a
 * misspelt filter is an error, not silently ignored) and with a description on every argument.
 */
function toolInput<S extends TObject>(schema: S, descriptions: Record<string, string> = {}): S {
  const properties = Object.fromEntries(
    Object.entries(schema.properties).map(([key, property]) => {
      const description = property.description ?? descriptions[key] ?? ARGUMENT_DESCRIPTIONS[key];
      return [key, description === undefined ? property : { ...property, description }];
    }),
  );
  return { ...schema, properties, additionalProperties: false };
}

const ROUTINE_ID = { id: 'Routine id (rtn_…)' };

function define<S extends TObject>(definition: ToolDefinition<S>): Tool {
  const validate = ajv.compile<Static<S>>(definition.input);
  return {
    name: definition.name,
    description: definition.description,
    inputSchema: definition.input,
    annotations: definition.annotations,
    async call(args, principal) {
      const input = structuredClone(args ?? {});
      if (!validate(input)) {
        throw new AppError('invalid_request', `Invalid arguments: ${ajv.errorsText(validate.errors, { dataVar: 'arguments' })}`, validate.errors);
      }
      return definition.run(input, principal);
    },
  };
}

/** The ids a delete tool answers with, as the HTTP route's `{ id, deleted: true }`. */
const deleted = (id: string): ToolOutput => ({ id, deleted: true });

const STEP_IDS = { run_id: 'Run id (run_…)', step_id: 'The waiting step\'s id in the plan' };

/**
 * The MCP tools (issues 10 and 22). Each calls the domain service method its HTTP route calls,
 * with arguments checked against the route's own TypeBox schemas.
 */
export function buildTools(routines: RoutinesService, tasks: TasksService, coordination: CoordinationService): Tool[] {
  return [
    define({
      name: 'list_pending_approvals',
      description:
        'List the human steps waiting for a decision across runs, oldest first: human_approval (decide with approve_step) and human_input (answer with submit_step_input), with the prompt and the run input; paged with limit/offset.',
      input: toolInput(PageQuery),
      annotations: READ,
      run: async (window) => ({ ...(await coordination.listPendingApprovals(page(window))) }),
    }),
    define({
      name: 'approve_step',
      description: 'Decide a waiting human_approval step: approved=true completes it and the run goes on, false rejects it and fails the run. Returns the run.',
      input: toolInput(Type.Composite([RunStepParams, ApproveBody]), STEP_IDS),
      annotations: DECIDE,
      run: async ({ run_id, step_id, ...decision }, principal) => ({ ...(await coordination.approve(run_id, step_id, decision, callerOf(principal))) }),
    }),
    define({
      name: 'submit_step_input',
      description: "Answer a waiting human_input step with data matching the step's JSON Schema (see list_pending_approvals). Returns the run.",
      input: toolInput(Type.Composite([RunStepParams, InputBody]), STEP_IDS),
      annotations: DECIDE,
      run: async ({ run_id, step_id, data, reason }, principal) => ({ ...(await coordination.submitInput(run_id, step_id, data, callerOf(principal), reason)) }),
    }),
    define({
      name: 'create_routine',
      description: 'Create a routine: a cron schedule or a webhook that sends routine.execute to an agent inbox.',
      input: toolInput(CreateRoutineBody),
      annotations: CREATE,
      run: async (args, principal) => ({ ...(await routines.create(args, principal.actor)) }),
    }),
    define({
      name: 'list_routines',
      description: 'List routines, optionally filtered by trigger_type and enabled; paged with limit/offset.',
      input: toolInput(ListRoutinesQuery, { enabled: 'true: only enabled routines; false: only paused ones' }),
      annotations: READ,
      run: async ({ trigger_type, enabled, ...window }) => ({ ...(await routines.list({ trigger_type, enabled }, page(window))) }),
    }),
    define({
      name: 'get_routine',
      description: 'Get one routine by id (rtn_…).',
      input: toolInput(RoutineParams, ROUTINE_ID),
      annotations: READ,
      run: async ({ id }) => ({ ...(await routines.get(id)) }),
    }),
    define({
      name: 'update_routine',
      description: 'Change some fields of a routine by id; enabled=false pauses it, true resumes it.',
      input: toolInput(Type.Composite([RoutineParams, UpdateRoutineBody]), ROUTINE_ID),
      annotations: UPDATE,
      run: async ({ id, ...patch }, principal) => ({ ...(await routines.update(id, patch, principal.actor)) }),
    }),
    define({
      name: 'delete_routine',
      description: 'Delete a routine by id, with its executions and fire history.',
      input: toolInput(RoutineParams, ROUTINE_ID),
      annotations: DELETE,
      run: async ({ id }) => {
        await routines.delete(id);
        return deleted(id);
      },
    }),
    define({
      name: 'trigger_routine',
      description: "Run a routine now, regardless of its schedule; returns the execution. payload replaces the routine's payload for this run.",
      input: toolInput(Type.Composite([RoutineParams, TriggerBody.anyOf[0]]), ROUTINE_ID),
      annotations: CREATE,
      run: async ({ id, payload, reason }, principal) => ({ ...(await routines.trigger(id, { payload, reason }, principal.actor)) }),
    }),
    define({
      name: 'create_task',
      description: 'Create a task in a project.',
      input: toolInput(CreateTaskBody),
      annotations: CREATE,
      run: async (args, principal) => ({ ...(await tasks.createTask(args, principal)) }),
    }),
    define({
      name: 'get_task',
      description: 'Get one task by id (tsk_…).',
      input: toolInput(TaskParams),
      annotations: READ,
      run: async ({ id }) => ({ ...(await tasks.getTask(id)) }),
    }),
    define({
      name: 'list_tasks',
      description: 'List tasks, oldest first, with filters; paged with limit/offset.',
      input: toolInput(ListTasksQuery),
      annotations: READ,
      run: async ({ limit, offset, ...filter }) => ({ ...(await tasks.listTasks(filter, page({ limit, offset }))) }),
    }),
    define({
      name: 'update_task',
      description: 'Change some fields of a task by id; each change is logged in its activity with the caller as actor.',
      input: toolInput(Type.Composite([TaskParams, UpdateTaskBody])),
      annotations: UPDATE,
      run: async ({ id, ...patch }, principal) => ({ ...(await tasks.updateTask(id, patch, principal)) }),
    }),
    define({
      name: 'delete_task',
      description: 'Delete a task by id, with its comments, dependencies and activity.',
      input: toolInput(TaskParams),
      annotations: DELETE,
      run: async ({ id }, principal) => {
        await tasks.deleteTask(id, principal);
        return deleted(id);
      },
    }),
    define({
      name: 'add_comment',
      description: 'Comment on a task, as the caller.',
      input: toolInput(Type.Composite([TaskParams, AddCommentBody])),
      annotations: CREATE,
      run: async ({ id, content }, principal) => ({ ...(await tasks.addComment(id, content, principal)) }),
    }),
    define({
      name: 'list_projects',
      description: 'List projects, oldest first; paged with limit/offset.',
      input: toolInput(PageQuery),
      annotations: READ,
      run: async (window) => ({ ...(await tasks.listProjects(page(window))) }),
    }),
  ];
}

function result(structuredContent: ToolOutput, isError: boolean): ToolResult {
  const text = JSON.stringify(structuredContent, null, 2);
  return isError ? { content: [{ type: 'text', text }], structuredContent, isError } : { content: [{ type: 'text', text }], structuredContent };
}

/**
 * Runs a tool. Domain errors become tool errors the model can read and act on, never
 * protocol errors; anything else is logged and reported as internal_error.
 */
export async function callTool(tool: Tool, args: unknown, principal: Principal, logger: Logger): Promise<ToolResult> {
  try {
    return result(await tool.call(args, principal), false);
  } catch (err) {
    if (err instanceof AppError) {
      const error: Record<string, unknown> = { code: err.code, message: err.message };
      if (err.details !== undefined) error.details = err.details;
      return result({ error }, true);
    }
    logger.error({ err, tool: tool.name }, 'MCP tool failed');
    return result({ error: { code: 'internal_error', message: 'Internal error' } }, true);
  }
}
