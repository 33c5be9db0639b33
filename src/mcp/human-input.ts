import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { authorizeDeclared, type Principal } from '../auth/index.js';
import { callerOf, type HumanDecisionService } from '../coordination/index.js';
import { Run, type PendingApproval } from '../coordination/schemas.js';
import { InvalidRequest, NotFound } from '../kernel/errors.js';
import type { ElicitationSchema, InteractiveTool, UserReply } from './server.js';
import { argumentsOf, DECIDE } from './tools/define.js';

const Arguments = Type.Object(
  {
    run_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, description: 'Run id (run_…); default: the oldest run waiting for input' }),
    ),
    step_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: "The waiting human_input step's id; default: the run's oldest" }),
    ),
  },
  { additionalProperties: false },
);
const argumentsIn = argumentsOf(Arguments);

/** What a call gives: the run once the reply is submitted, or what the user did instead. */
const Output = Type.Object({
  submitted: Type.Boolean({ description: 'Whether the reply was submitted to the step' }),
  run: Type.Optional(Run),
  action: Type.Optional(
    Type.Union([Type.Literal('decline'), Type.Literal('cancel')], { description: 'What the user did instead of answering' }),
  ),
  run_id: Type.Optional(Type.String()),
  step_id: Type.Optional(Type.String()),
});

/** Which step the question was about: it travels through the client (MCP requestState), so it is re-checked. */
const Asked = Type.Object({ run_id: Type.String({ maxLength: 100 }), step_id: Type.String({ maxLength: 200 }) });
type Asked = Static<typeof Asked>;

/** The one field a step's data is asked in when its schema is no flat form (see formOf). */
const JSON_FIELD = 'json';
const PRIMITIVE_TYPES = new Set(['string', 'number', 'integer', 'boolean']);
/** The keywords MCP lets a form field carry (elicitation's PrimitiveSchemaDefinition). */
const FIELD_KEYWORDS = [
  'type',
  'title',
  'description',
  'default',
  'enum',
  'enumNames',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'format',
];
const FIELD_FORMATS = new Set(['email', 'uri', 'date', 'date-time']);

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A property as an MCP form field, or undefined when MCP forms cannot ask for it (objects, arrays, unions…). */
function fieldOf(property: unknown): Record<string, unknown> | undefined {
  if (!isObject(property) || typeof property.type !== 'string' || !PRIMITIVE_TYPES.has(property.type)) return undefined;
  if (Object.keys(property).some((keyword) => !FIELD_KEYWORDS.includes(keyword))) return undefined;
  if (
    property.enum !== undefined &&
    !(Array.isArray(property.enum) && property.type === 'string' && property.enum.every((v) => typeof v === 'string'))
  )
    return undefined;
  if (property.format !== undefined && !(property.type === 'string' && FIELD_FORMATS.has(String(property.format)))) return undefined;
  return property;
}

/**
 * The MCP form for a step's JSON Schema: the schema itself when it is a flat object of
 * primitives (what MCP elicitation allows), else undefined and the data is asked as JSON text.
 * Either way the coordination service checks the answer against the full schema.
 */
function formOf(schema: Record<string, unknown>): ElicitationSchema | undefined {
  if (schema.type !== 'object' || !isObject(schema.properties) || Object.keys(schema.properties).length === 0) return undefined;
  const properties: Record<string, Record<string, unknown>> = {};
  for (const [name, property] of Object.entries(schema.properties)) {
    const field = fieldOf(property);
    if (!field) return undefined;
    properties[name] = field;
  }
  const required = Array.isArray(schema.required) ? schema.required.filter((name): name is string => typeof name === 'string') : [];
  return { type: 'object', properties: properties as ElicitationSchema['properties'], required };
}

function jsonForm(schema: Record<string, unknown>): ElicitationSchema {
  return {
    type: 'object',
    properties: {
      [JSON_FIELD]: {
        type: 'string',
        title: 'Data (JSON)',
        description: `A JSON object matching this JSON Schema: ${JSON.stringify(schema)}`,
      },
    },
    required: [JSON_FIELD],
  };
}

/** The data a reply gives for the step: the form's fields, or the JSON text parsed. */
function dataOf(step: PendingApproval, content: Record<string, unknown>): Record<string, unknown> {
  const schema = step.schema ?? {};
  if (formOf(schema)) return content;
  const text = content[JSON_FIELD];
  let data: unknown;
  try {
    data = typeof text === 'string' ? JSON.parse(text) : undefined;
  } catch {
    // reported below
  }
  if (!isObject(data))
    throw new InvalidRequest('The answer is not a JSON object', [{ field: JSON_FIELD, message: 'must be a JSON object' }]);
  return data;
}

async function waitingStep(coordination: HumanDecisionService, of: { runId?: string; stepId?: string }): Promise<PendingApproval> {
  const step = await coordination.oldestWaitingInput(of);
  if (!step) throw new NotFound('Waiting human_input step', [of.runId, of.stepId].filter(Boolean).join('/') || undefined);
  return step;
}

/**
 * `request_step_input`: asks the MCP client's user for the data a waiting
 * human_input step needs (a 2025 client gets an elicitation request, a 2026-07-28 client an
 * input-required result) and submits the reply as submit_step_input would: same checks,
 * same field errors. A declined or cancelled form submits nothing.
 */
export function humanInputTool(coordination: HumanDecisionService): InteractiveTool {
  return {
    name: 'request_step_input',
    group: 'coordination',
    title: "Ask the user for a step's input",
    description:
      "Ask the user, through this MCP client, for the data a waiting human_input step needs (the step's JSON Schema as a form) and submit it. Without run_id: the oldest waiting step. Returns the run, or submitted=false when the user declines.",
    inputSchema: Arguments,
    outputSchema: Output,
    annotations: DECIDE,
    permission: 'approvals:decide',
    async ask(args, principal: Principal) {
      // Before the user is asked anything: submitting needs the permission too.
      authorizeDeclared(principal, { permission: 'approvals:decide' });
      const { run_id, step_id } = argumentsIn(args);
      const step = await waitingStep(coordination, { runId: run_id, stepId: step_id });
      const schema = step.schema ?? {};
      const asked: Asked = { run_id: step.run_id, step_id: step.step_id };
      return {
        question: {
          message: `${step.prompt ?? 'Input needed'} (run ${step.run_id}, step ${step.step_id})`,
          requestedSchema: formOf(schema) ?? jsonForm(schema),
        },
        state: JSON.stringify(asked),
      };
    },
    async finish(state: string, reply: UserReply, principal: Principal) {
      authorizeDeclared(principal, { permission: 'approvals:decide' });
      let asked: unknown;
      try {
        asked = JSON.parse(state);
      } catch {
        // refused below
      }
      if (!Value.Check(Asked, asked)) throw new InvalidRequest('Unknown question state');
      if (reply.action !== 'accept') return { submitted: false, action: reply.action, run_id: asked.run_id, step_id: asked.step_id };
      const step = await waitingStep(coordination, { runId: asked.run_id, stepId: asked.step_id });
      const run = await coordination.submitInput(step.run_id, step.step_id, dataOf(step, reply.content), callerOf(principal));
      return { submitted: true, run };
    },
  };
}
