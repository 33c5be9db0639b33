import { Type } from '@sinclair/typebox';
import { callerOf } from '../../coordination/index.js';
import { Plan } from '../../coordination/plan-schemas.js';
import { ApproveBody, InputBody, PendingApproval, Run, RunParams, RunStepParams, StartRunBody } from '../../coordination/schemas.js';
import { page, PageQuery } from '../../http/schemas.js';
import { DECIDE, define, DISPATCH, pagedOutput, READ, toolInput, type GroupTool, type ToolServices } from './define.js';

const RUN_ID = { run_id: 'Run id (run_…)' };
const STEP_IDS = { ...RUN_ID, step_id: "The waiting step's id in the plan" };

/** Coordination: plans, their runs, and the human steps that wait for a decision. */
export function coordinationTools({ coordination }: ToolServices): GroupTool[] {
  return [
    define({
      name: 'list_plans',
      permission: 'plans:read',
      title: 'List plans',
      description:
        'List the plans (their current versions) with their steps, oldest first; paged with limit/offset. Start one with start_run.',
      input: toolInput(PageQuery),
      output: pagedOutput(Plan),
      annotations: READ,
      run: (window) => coordination.plans.listPlans(page(window)),
    }),
    define({
      name: 'start_run',
      permission: 'runs:write',
      title: 'Start a run of a plan',
      description:
        "Start a run of a plan (by id or alias) with an input object the steps' templates read; returns the run with its steps. Follow it with get_run.",
      input: toolInput(StartRunBody, { input: 'The run input, read by the steps as {{input.<field>}}' }),
      output: Run,
      annotations: DISPATCH,
      run: (body, principal) => coordination.runs.startRun(body, callerOf(principal)),
    }),
    define({
      name: 'get_run',
      permission: 'runs:read',
      title: 'Get a run',
      description: 'Get a run by id with the status, input, output and error of each of its steps.',
      input: toolInput(RunParams, RUN_ID),
      output: Run,
      annotations: READ,
      run: ({ run_id }) => coordination.runs.getRun(run_id),
    }),
    define({
      name: 'list_pending_approvals',
      permission: 'runs:read',
      title: 'List pending approvals',
      description:
        'List the human steps waiting for a decision across runs, oldest first: human_approval (decide with approve_step) and human_input (answer with submit_step_input), with the prompt and the run input; paged with limit/offset.',
      input: toolInput(PageQuery),
      output: pagedOutput(PendingApproval),
      annotations: READ,
      run: (window) => coordination.decisions.listPendingApprovals(page(window)),
    }),
    define({
      name: 'approve_step',
      permission: 'approvals:decide',
      orNamedApprover: true,
      title: 'Approve or reject a step',
      description:
        'Decide a waiting human_approval step: approved=true completes it and the run goes on, false rejects it and fails the run. Returns the run.',
      input: toolInput(Type.Composite([RunStepParams, ApproveBody]), STEP_IDS),
      output: Run,
      annotations: DECIDE,
      run: ({ run_id, step_id, ...decision }, principal) => coordination.decisions.approve(run_id, step_id, decision, callerOf(principal)),
    }),
    define({
      name: 'submit_step_input',
      permission: 'approvals:decide',
      title: 'Answer a human_input step',
      description:
        "Answer a waiting human_input step with data matching the step's JSON Schema (see list_pending_approvals). Returns the run.",
      input: toolInput(Type.Composite([RunStepParams, InputBody]), STEP_IDS),
      output: Run,
      annotations: DECIDE,
      run: ({ run_id, step_id, data, reason }, principal) =>
        coordination.decisions.submitInput(run_id, step_id, data, callerOf(principal), reason),
    }),
  ];
}
