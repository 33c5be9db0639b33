import type { TObject, TSchema } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { Artifact, ArtifactParams, SnippetBody } from '../../src/artifacts/schemas.js';
import { ApproveBody, InputBody, PendingApproval, Run, RunParams, RunStepParams, StartRunBody } from '../../src/coordination/schemas.js';
import { Plan } from '../../src/coordination/plan-schemas.js';
import { LookupEnvelope, LookupQuery, SearchBody, SearchEnvelope } from '../../src/discovery/schemas.js';
import { Deleted, PageQuery, withIntegerMaximum } from '../../src/http/schemas.js';
import { buildTools, type ToolServices } from '../../src/mcp/tools/index.js';
import { AcknowledgeBody, Acknowledged, Received, ReceiveQuery, SendBody, Sent } from '../../src/messaging/schemas.js';
import {
  CreateRoutineBody,
  Execution,
  ListRoutinesQuery,
  Routine,
  RoutineParams,
  TriggerBody,
  UpdateRoutineBody,
} from '../../src/routines/schemas.js';
import {
  AddCommentBody,
  Comment,
  CreateTaskBody,
  ListTasksQuery,
  Project,
  Task,
  TaskParams,
  UpdateTaskBody,
} from '../../src/tasks/schemas.js';

/** How a tool's output schema is made from a route's response schema. */
type Output =
  | { data: TSchema } // the route's `data` itself
  | { page: TSchema } // a list route's item, as { items, total }
  | { fields: Record<string, TSchema> }; // fields taken from the route's data and meta

const lookup = LookupEnvelope.properties;
const search = SearchEnvelope.properties;

/** Each tool: the route schemas its arguments come from (body, query, params) and its output. */
const SOURCES: Record<string, { input: TObject[]; output: Output }> = {
  create_routine: { input: [CreateRoutineBody], output: { data: Routine } },
  list_routines: { input: [ListRoutinesQuery], output: { page: Routine } },
  get_routine: { input: [RoutineParams], output: { data: Routine } },
  update_routine: { input: [RoutineParams, UpdateRoutineBody], output: { data: Routine } },
  delete_routine: { input: [RoutineParams], output: { data: Deleted.properties.data } },
  trigger_routine: { input: [RoutineParams, TriggerBody.anyOf[0]], output: { data: Execution } },
  create_task: { input: [CreateTaskBody], output: { data: Task } },
  get_task: { input: [TaskParams], output: { data: Task } },
  list_tasks: { input: [ListTasksQuery], output: { page: Task } },
  update_task: { input: [TaskParams, UpdateTaskBody], output: { data: Task } },
  delete_task: { input: [TaskParams], output: { data: Deleted.properties.data } },
  add_comment: { input: [TaskParams, AddCommentBody], output: { data: Comment } },
  list_projects: { input: [PageQuery], output: { page: Project } },
  send_message: { input: [SendBody], output: { data: Sent } },
  receive_messages: { input: [ReceiveQuery], output: { data: Received } },
  acknowledge_message: { input: [AcknowledgeBody.anyOf[0]], output: { data: Acknowledged } },
  find_agents: {
    input: [LookupQuery],
    output: {
      fields: { agents: lookup.data.properties.agents, strategy: lookup.meta.properties.strategy, total: lookup.meta.properties.total },
    },
  },
  search_capabilities: {
    input: [SearchBody],
    output: { fields: { results: search.data.properties.results, ranker: search.meta.properties.ranker } },
  },
  list_plans: { input: [PageQuery], output: { page: Plan } },
  start_run: { input: [StartRunBody], output: { data: Run } },
  get_run: { input: [RunParams], output: { data: Run } },
  list_pending_approvals: { input: [PageQuery], output: { page: PendingApproval } },
  approve_step: { input: [RunStepParams, ApproveBody], output: { data: Run } },
  submit_step_input: { input: [RunStepParams, InputBody], output: { data: Run } },
  create_snippet: { input: [SnippetBody], output: { data: Artifact } },
  read_artifact: { input: [ArtifactParams], output: { fields: Artifact.properties } },
};

/** A schema without the descriptions the tools may add (arguments of path and query parameters have none in the routes). */
function withoutDescriptions(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutDescriptions);
  if (typeof schema !== 'object' || schema === null) return schema;
  return Object.fromEntries(
    Object.entries(schema)
      .filter(([key]) => key !== 'description')
      .map(([key, value]) => [key, withoutDescriptions(value)]),
  );
}

// The services are not called while the tools are built: only their schemas are looked at here.
const tools = buildTools({} as ToolServices);

describe('MCP tool schemas', () => {
  it('covers every tool', () => {
    expect(tools.map((tool) => tool.name).sort()).toEqual(Object.keys(SOURCES).sort());
  });

  it('lists whole schemas: no $ref or $id a client would have to resolve (the OpenAPI document names resources, the tools do not)', () => {
    const listed = JSON.stringify(tools.map((tool) => [tool.inputSchema, tool.outputSchema]));
    expect(listed).not.toMatch(/"\$(ref|id)"/);
    // The resources' titles stay, as annotations.
    expect(tools.find((tool) => tool.name === 'get_run')!.outputSchema.title).toBe('Run');
  });

  for (const tool of tools) {
    const source = SOURCES[tool.name]!;

    it(`${tool.name}: its arguments are the route's, bounded as the routes bound them, and no others`, () => {
      const expected = Object.assign({}, ...source.input.map((schema) => schema.properties)) as Record<string, TSchema>;
      expect(Object.keys(tool.inputSchema.properties).sort()).toEqual(Object.keys(expected).sort());
      for (const [name, schema] of Object.entries(tool.inputSchema.properties)) {
        expect(withoutDescriptions(schema), name).toEqual(withoutDescriptions(withIntegerMaximum(expected[name])));
      }
      const required = source.input.flatMap((schema) => schema.required ?? []);
      expect([...(tool.inputSchema.required ?? [])].sort()).toEqual(required.sort());
      expect(tool.inputSchema.additionalProperties).toBe(false);
    });

    it(`${tool.name}: its output is the route's response data`, () => {
      const output = source.output;
      if ('data' in output) expect(tool.outputSchema).toBe(output.data);
      else if ('page' in output) expect(tool.outputSchema.properties.items?.items).toBe(output.page);
      else for (const [name, schema] of Object.entries(output.fields)) expect(tool.outputSchema.properties[name], name).toEqual(schema);
    });
  }
});
