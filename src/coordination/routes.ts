import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { accepted, created, deleted, list, ok } from '../http/reply.js';
import { DataEnvelope, Deleted, ListEnvelope, page, PageQuery, ReasonBody } from '../http/schemas.js';
import { InvalidRequest } from '../kernel/errors.js';
import type { StepDefinition } from './plan-definition.js';
import type { Planner } from './planner.js';
import { GenerateBody, GeneratedPlan, Plan, PlanBody, PlanParams, VersionParams } from './plan-schemas.js';
import {
  ApprovalLink,
  ApprovalLinkParams,
  ApproveBody,
  CreateLinkBody,
  InputBody,
  LinkDecision,
  LinkDecisionBody,
  LinkedStep,
  ListRunsQuery,
  PendingApproval,
  Run,
  RunEvent,
  RunParams,
  RunStepParams,
  StartRunBody,
} from './schemas.js';
import {
  CreateTriggerBody,
  Fire,
  HookParams,
  HookStarted,
  ListTriggersQuery,
  Trigger,
  TriggerParams,
  UpdateTriggerBody,
} from './trigger-schemas.js';
import { callerOf } from './caller.js';
import type { HumanDecisionService } from './human-decisions.js';
import type { PlanInput, PlanService } from './plan-service.js';
import type { RunService } from './run-service.js';
import { WEBHOOK_METHODS, type TriggerConfig } from './trigger-config.js';
import type { TriggerFiring } from './trigger-firing.js';
import type { TriggersService } from './triggers.js';

/** Coordination's services, as the routes and the MCP tools call them. */
export interface CoordinationServices {
  plans: PlanService;
  runs: RunService;
  decisions: HumanDecisionService;
}

const tags = ['coordination'];
/**
 * A decision through a link is `{approved, comment}` or a human_input's `{data}`, a few KB; 32 KiB
 * holds the longest comment (4,000 characters) however it is encoded (`\u0001` is 6 bytes each).
 */
const LINK_DECISION_BODY_BYTES = 32 * 1024;
const LINK_TOKEN = new RegExp(ApprovalLinkParams.properties.token.pattern!);
/** The body schema checks each field's shape; the service checks what each step type needs. */
const planInput = (body: PlanBody): PlanInput => ({ ...body, steps: body.steps as StepDefinition[] });

export function coordinationRoutes(
  { plans, runs, decisions }: CoordinationServices,
  { triggers, firing }: { triggers: TriggersService; firing: TriggerFiring },
  planner: Planner,
): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/coordination/plans/generate',
      {
        config: { permission: 'plans:write' },
        schema: {
          tags,
          summary: 'Draft a plan from a goal (local planner over discovery search, or the configured model with a local fallback)',
          body: GenerateBody,
          response: { 200: DataEnvelope(GeneratedPlan) },
        },
      },
      async (request, reply) => ok(reply, await planner.generate(request.body)),
    );

    app.post(
      '/coordination/plans',
      {
        config: { permission: 'plans:write', conflict: 'Another plan has this alias' },
        schema: {
          tags,
          summary: 'Create a plan (validated: ids, dependencies, cycles, step fields, templates)',
          body: PlanBody,
          response: { 201: DataEnvelope(Plan) },
        },
      },
      async (request, reply) => created(reply, await plans.createPlan(planInput(request.body), callerOf(request.principal))),
    );

    app.get(
      '/coordination/plans',
      {
        config: { permission: 'plans:read' },
        schema: { tags, summary: 'List plans (current versions)', querystring: PageQuery, response: { 200: ListEnvelope(Plan) } },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await plans.listPlans(window), window);
      },
    );

    app.get(
      '/coordination/plans/:plan_id',
      {
        config: { permission: 'plans:read' },
        schema: { tags, summary: 'Get a plan by id or alias', params: PlanParams, response: { 200: DataEnvelope(Plan) } },
      },
      async (request, reply) => ok(reply, await plans.getPlan(request.params.plan_id)),
    );

    app.put(
      '/coordination/plans/:plan_id',
      {
        config: { permission: 'plans:write', conflict: 'Another plan has the new alias' },
        schema: {
          tags,
          summary: 'Replace a plan: version + 1 (runs keep the version they started with)',
          params: PlanParams,
          body: PlanBody,
          response: { 200: DataEnvelope(Plan) },
        },
      },
      async (request, reply) =>
        ok(reply, await plans.updatePlan(request.params.plan_id, planInput(request.body), callerOf(request.principal))),
    );

    app.delete(
      '/coordination/plans/:plan_id',
      {
        config: { permission: 'plans:write' },
        schema: { tags, summary: 'Delete a plan and its versions (runs keep their copy)', params: PlanParams, response: { 200: Deleted } },
      },
      async (request, reply) => deleted(reply, await plans.deletePlan(request.params.plan_id, callerOf(request.principal))),
    );

    app.get(
      '/coordination/plans/:plan_id/versions/:version',
      {
        config: { permission: 'plans:read' },
        schema: { tags, summary: 'Get an earlier version of a plan', params: VersionParams, response: { 200: DataEnvelope(Plan) } },
      },
      async (request, reply) => ok(reply, await plans.getPlanVersion(request.params.plan_id, request.params.version)),
    );

    app.post(
      '/coordination/runs',
      {
        config: { permission: 'runs:write' },
        schema: { tags, summary: 'Start a run of a plan', body: StartRunBody, response: { 201: DataEnvelope(Run) } },
      },
      async (request, reply) => created(reply, await runs.startRun(request.body, callerOf(request.principal))),
    );

    app.get(
      '/coordination/runs',
      {
        config: { permission: 'runs:read' },
        schema: {
          tags,
          summary: 'List runs, newest first (by plan, status, start time, tag and metadata)',
          querystring: ListRunsQuery,
          response: { 200: ListEnvelope(Run) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        const { plan_id, status, started_after, started_before, tag, metadata } = request.query;
        return list(reply, await runs.listRuns({ plan_id, status, started_after, started_before, tag, metadata }, window), window);
      },
    );

    app.get(
      '/coordination/runs/:run_id',
      {
        config: { permission: 'runs:read' },
        schema: { tags, summary: 'Get a run with its steps', params: RunParams, response: { 200: DataEnvelope(Run) } },
      },
      async (request, reply) => ok(reply, await runs.getRun(request.params.run_id)),
    );

    app.get(
      '/coordination/runs/:run_id/events',
      {
        config: { permission: 'runs:read' },
        schema: {
          tags,
          summary: "The run's timeline: every state change, oldest first",
          params: RunParams,
          querystring: PageQuery,
          response: { 200: ListEnvelope(RunEvent) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await runs.events(request.params.run_id, window), window);
      },
    );

    app.post(
      '/coordination/runs/:run_id/cancel',
      {
        config: { permission: 'runs:write', conflict: 'The run has finished already' },
        schema: {
          tags,
          summary: 'Cancel a running or waiting run (its in-flight steps and child runs); 409 once finished',
          params: RunParams,
          body: Type.Optional(ReasonBody),
          response: { 200: DataEnvelope(Run) },
        },
      },
      async (request, reply) => ok(reply, await runs.cancelRun(request.params.run_id, callerOf(request.principal), request.body?.reason)),
    );

    app.post(
      '/coordination/runs/:run_id/redrive',
      {
        config: { permission: 'runs:write', conflict: 'The run has not failed: only failed runs are redriven' },
        schema: {
          tags,
          summary: 'Restart a failed run from its failed steps (completed steps keep their output)',
          params: RunParams,
          body: Type.Optional(ReasonBody),
          response: { 200: DataEnvelope(Run) },
        },
      },
      async (request, reply) => ok(reply, await runs.redrive(request.params.run_id, callerOf(request.principal), request.body?.reason)),
    );

    app.post(
      '/coordination/runs/:run_id/steps/:step_id/approve',
      {
        config: {
          permission: 'approvals:decide',
          orNamedApprover: true,
          conflict:
            'The step is no waiting human_approval step: it was decided already (`error.details` names who and when), is not waiting, or its run was cancelled',
        },
        schema: {
          tags,
          summary: 'Decide a waiting human_approval step (approved: false fails it)',
          params: RunStepParams,
          body: ApproveBody,
          response: { 200: DataEnvelope(Run) },
        },
      },
      async (request, reply) =>
        ok(reply, await decisions.approve(request.params.run_id, request.params.step_id, request.body, callerOf(request.principal))),
    );

    app.post(
      '/coordination/runs/:run_id/steps/:step_id/input',
      {
        config: {
          permission: 'approvals:decide',
          conflict:
            'The step is no waiting human_input step: it was answered already (`error.details` names who and when), is not waiting, or its run was cancelled',
        },
        schema: {
          tags,
          summary: "Submit a waiting human_input step's data (validated against its schema)",
          params: RunStepParams,
          body: InputBody,
          response: { 200: DataEnvelope(Run) },
        },
      },
      async (request, reply) =>
        ok(
          reply,
          await decisions.submitInput(
            request.params.run_id,
            request.params.step_id,
            request.body.data,
            callerOf(request.principal),
            request.body.reason,
          ),
        ),
    );

    app.post(
      '/coordination/runs/:run_id/steps/:step_id/links',
      {
        config: {
          permission: 'approvals:decide',
          conflict:
            "The step is no waiting human step (decided already, not waiting, or its run was cancelled), or the person is gone, disabled or not among the step's approvers",
        },
        schema: {
          tags,
          summary:
            'Make an approval link that decides a waiting human step as one person (the caller, or anyone the step accepts when an admin asks)',
          params: RunStepParams,
          body: CreateLinkBody,
          response: { 201: DataEnvelope(ApprovalLink) },
        },
      },
      async (request, reply) =>
        created(
          reply,
          await decisions.createLink(request.params.run_id, request.params.step_id, request.body.approver, callerOf(request.principal)),
        ),
    );

    app.get(
      '/coordination/approvals',
      {
        config: { permission: 'runs:read' },
        schema: {
          tags,
          summary: 'Human steps waiting for a person, across runs, oldest first (the approvals inbox)',
          querystring: PageQuery,
          response: { 200: ListEnvelope(PendingApproval) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await decisions.listPendingApprovals(window), window);
      },
    );

    app.get(
      '/coordination/approvals/:token',
      {
        config: {
          public: true,
          conflict: 'The link was used, has expired or is for an earlier wait of its step, or the run was cancelled',
        },
        schema: {
          tags,
          summary:
            'What an approval link asks (no auth header: the token authenticates; never decides); 409 once used, expired or cancelled',
          params: ApprovalLinkParams,
          security: [],
          response: { 200: DataEnvelope(LinkedStep) },
        },
      },
      async (request, reply) => ok(reply, await decisions.linkedStep(request.params.token)),
    );

    app.post(
      '/coordination/approvals/:token',
      {
        config: {
          public: true,
          conflict:
            'The link was used (`error.details` names who decided and when), has expired or is for an earlier wait of its step, or the run was cancelled',
          forbidden:
            "The link decides as no one (the event's link: a signed-in person decides), or the person it decides as is gone, disabled or not among the step's approvers",
        },
        bodyLimit: LINK_DECISION_BODY_BYTES,
        // Before the body is read (and so before the params' validation): a malformed, bogus or
        // expired token is refused without it.
        onRequest: async (request) => {
          const { token } = request.params as { token: string };
          if (token.length > ApprovalLinkParams.properties.token.maxLength! || !LINK_TOKEN.test(token)) {
            const message = 'must be the token of an approve_url (payload.signature, base64url)';
            throw new InvalidRequest(`Invalid request: token ${message}`, [{ field: 'token', in: 'params', message }]);
          }
          await decisions.checkLink(token);
        },
        schema: {
          tags,
          summary:
            'Decide a human step through its approval link: {approved, comment} or {data}; a second use answers 409 naming who decided when',
          params: ApprovalLinkParams,
          body: LinkDecisionBody,
          security: [],
          response: { 200: DataEnvelope(LinkDecision) },
        },
      },
      async (request, reply) => ok(reply, await decisions.decideByLink(request.params.token, request.body)),
    );

    app.post(
      '/coordination/triggers',
      {
        config: { permission: 'plans:write', conflict: 'Another trigger already uses this webhook path' },
        schema: {
          tags,
          summary: 'Create a trigger (schedule, event or webhook) that starts runs of a plan',
          body: CreateTriggerBody,
          response: { 201: DataEnvelope(Trigger) },
        },
      },
      async (request, reply) =>
        created(
          reply,
          await triggers.create(
            { ...request.body, config: request.body.config as TriggerConfig },
            request.principal.agentId ?? request.principal.actor,
          ),
        ),
    );

    app.get(
      '/coordination/triggers',
      {
        config: { permission: 'plans:read' },
        schema: { tags, summary: 'List triggers', querystring: ListTriggersQuery, response: { 200: ListEnvelope(Trigger) } },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await triggers.list(request.query.plan_id, window), window);
      },
    );

    app.get(
      '/coordination/triggers/:trigger_id',
      {
        config: { permission: 'plans:read' },
        schema: { tags, summary: 'Get a trigger', params: TriggerParams, response: { 200: DataEnvelope(Trigger) } },
      },
      async (request, reply) => ok(reply, await triggers.get(request.params.trigger_id)),
    );

    app.patch(
      '/coordination/triggers/:trigger_id',
      {
        config: { permission: 'plans:write', conflict: 'Another trigger already uses the new webhook path' },
        schema: {
          tags,
          summary: 'Update a trigger (enabled=false pauses it; a new schedule starts from now)',
          params: TriggerParams,
          body: UpdateTriggerBody,
          response: { 200: DataEnvelope(Trigger) },
        },
      },
      async (request, reply) =>
        ok(
          reply,
          await triggers.update(
            request.params.trigger_id,
            { ...request.body, config: request.body.config as TriggerConfig | undefined },
            request.principal,
          ),
        ),
    );

    app.delete(
      '/coordination/triggers/:trigger_id',
      {
        config: { permission: 'plans:write' },
        schema: { tags, summary: 'Delete a trigger and its fires', params: TriggerParams, response: { 200: Deleted } },
      },
      async (request, reply) => {
        await triggers.delete(request.params.trigger_id, request.principal);
        return deleted(reply, request.params.trigger_id);
      },
    );

    app.get(
      '/coordination/triggers/:trigger_id/fires',
      {
        config: { permission: 'plans:read' },
        schema: {
          tags,
          summary: "A trigger's latest fires, newest first (started, skipped, filtered, failed; the last 100 are kept)",
          params: TriggerParams,
          querystring: PageQuery,
          response: { 200: ListEnvelope(Fire) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await triggers.fires(request.params.trigger_id, window), window);
      },
    );

    app.route({
      method: [...WEBHOOK_METHODS],
      url: '/coordination/hooks/*',
      config: { permission: 'runs:write', conflict: 'The trigger is disabled, or its run could not start (the message says why)' },
      schema: {
        tags,
        summary: 'Call a webhook trigger: starts a run with the body and query as event.* (404 unknown path, 405 wrong method)',
        params: HookParams,
        response: { 202: DataEnvelope(HookStarted) },
      },
      handler: async (request, reply) =>
        accepted(
          reply,
          await firing.invokeWebhook(request.method, request.params['*'], request.body, request.query as Record<string, unknown>),
        ),
    });
  };
}
