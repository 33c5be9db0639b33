import type { Logger } from 'pino';
import { iso } from '../kernel/clock.js';
import type { Tx } from '../kernel/tx.js';
import type { Inbox, Notification, NotificationChannels, OutgoingMessage } from '../kernel/ports.js';
import { approverAgent } from './approvers.js';
import type { ApprovalTimerRow, ApprovalTimerStore } from './approval-timer-store.js';
import type { StepTemplate } from './plan-definition.js';
import { linkClaim, type Linker } from './run-events.js';
import { definition, PLATFORM_SENDER, stepDetail, stepOutput, type RunContext, type StepState } from './run-state.js';
import type { NewRunEvent } from './run-list-store.js';
import { askedInput, isChannelId } from './steps/human.js';

/**
 * Where human steps' notifications go. Coordination owns this port and notifications
 * implements it; notifications is built after coordination, so app.ts binds it late.
 */
export type ApprovalChannels = Pick<NotificationChannels, 'notify' | 'missing'>;

/** The notification channels, bound once the notifications domain exists (before any request or worker). */
export class LateBoundChannels implements ApprovalChannels {
  private bound: ApprovalChannels | null = null;

  bind(channels: ApprovalChannels): void {
    this.bound = channels;
  }

  notify(...args: Parameters<ApprovalChannels['notify']>): ReturnType<ApprovalChannels['notify']> {
    return this.channels().notify(...args);
  }

  missing(...args: Parameters<ApprovalChannels['missing']>): ReturnType<ApprovalChannels['missing']> {
    return this.channels().missing(...args);
  }

  private channels(): ApprovalChannels {
    if (!this.bound) throw new Error('Notification channels are not bound to coordination (app.ts binds them)');
    return this.bound;
  }
}

export interface ApprovalNoticesDeps {
  timers: ApprovalTimerStore;
  channels: ApprovalChannels;
  inbox: Inbox;
  publicUrl: () => string;
  logger: Logger;
  /** Wakes the run timer when a timer is due before its next look. */
  wakeTimer: (tx: Tx, dueAt: number) => Promise<void>;
}

const HUMAN_TYPES = new Set(['human_approval', 'human_input']);
const DECIDED = new Set(['step.approved', 'step.rejected', 'step.input_received']);

/** The channels an escalation tells. */
const escalationChannels = (def: StepTemplate) => (def.escalate_to ?? []).filter(isChannelId);

/** An agent started the run (its key's actor is its bare id); people, admins, keys and triggers have prefixed actors. */
const startingAgent = (createdBy: string): string | null => (createdBy.includes(':') || createdBy === 'admin' ? null : createdBy);

/**
 * What human steps tell people, from the transitions a save writes: the `notify` channels hear
 * that a step waits (with its approval link), its reminder and its decision (by whom); an
 * escalation tells its channels and asks the approvers it added; the run's starting agent hears
 * of the decision. Reminders and escalations become timers (approval_timers) in the same save.
 */
export class ApprovalNotices {
  constructor(private readonly deps: ApprovalNoticesDeps) {}

  async saved(tx: Tx, contexts: RunContext[], link: Linker | null): Promise<void> {
    const timers: ApprovalTimerRow[] = [];
    const messages: OutgoingMessage[] = [];
    for (const ctx of contexts) {
      for (const entry of ctx.events) {
        const step = entry.step_id ? ctx.steps.get(entry.step_id) : undefined;
        if (!step) continue;
        const def = definition(ctx, step);
        if (!HUMAN_TYPES.has(def.type) || !hasNotices(def)) continue;
        await this.onEntry(tx, { ctx, step, def, entry, link, timers, messages });
      }
    }
    await this.deps.timers.insert(tx, timers);
    if (timers.length > 0) await this.deps.wakeTimer(tx, Math.min(...timers.map((t) => t.due_at)));
    if (messages.length > 0) await this.deps.inbox.send({ tx, messages });
  }

  private async onEntry(
    tx: Tx,
    at: {
      ctx: RunContext;
      step: StepState;
      def: StepTemplate;
      entry: NewRunEvent;
      link: Linker | null;
      timers: ApprovalTimerRow[];
      messages: OutgoingMessage[];
    },
  ): Promise<void> {
    const { ctx, step, def, entry, link } = at;
    const notify = def.notify ?? [];
    const stepId = step.row.step_id;
    switch (entry.type) {
      case 'step.waiting': {
        await this.tell(tx, notify, this.asking(ctx, step, def, link!, 'warning', ''));
        const waitId = stepDetail(step).wait_id ?? '';
        const schedule = (kind: ApprovalTimerRow['kind'], seconds: number | undefined) => {
          if (seconds !== undefined)
            at.timers.push({
              id: `${ctx.run.id}/${stepId}/${waitId}/${kind}`,
              run_id: ctx.run.id,
              step_id: stepId,
              wait_id: waitId,
              kind,
              due_at: ctx.now + seconds * 1000,
            });
        };
        schedule('remind', def.remind_after_s);
        schedule('escalate', def.escalate_after_s);
        return;
      }
      case 'step.reminded':
        return this.tell(tx, notify, this.asking(ctx, step, def, link, 'warning', 'Reminder: '));
      case 'step.escalated': {
        await this.tell(tx, escalationChannels(def), this.asking(ctx, step, def, link, 'critical', 'Escalated: '));
        const added = (JSON.parse(entry.detail) as { added_approvers: string[] }).added_approvers;
        for (const approver of added) {
          const agent = approverAgent(approver);
          if (agent === null) continue;
          const claim = { ...linkClaim(ctx, step, null), approver };
          at.messages.push({
            source: PLATFORM_SENDER,
            destination: agent,
            event_name: 'approval.requested',
            payload: { ...this.asked(ctx, step), approve_url: link!(claim), escalated: true },
          });
        }
        return;
      }
      case 'step.timed_out':
        // A timeout that approves or rejects is told as that decision.
        if ((def.on_timeout ?? 'fail') !== 'fail') return;
        await this.decided(tx, ctx, step, def, at.messages, {
          title: 'No decision in time',
          by: PLATFORM_SENDER,
          text: `No decision within ${def.timeout_seconds} s: the step failed.`,
        });
        return;
      default:
        if (!DECIDED.has(entry.type)) return;
        await this.decided(tx, ctx, step, def, at.messages, decisionInWords(entry, step));
    }
  }

  /** A decision: told to the notify channels (and an escalation's, once it escalated), and to the run's starting agent. */
  private async decided(
    tx: Tx,
    ctx: RunContext,
    step: StepState,
    def: StepTemplate,
    messages: OutgoingMessage[],
    decision: { title: string; by: string; text: string },
  ): Promise<void> {
    const stepId = step.row.step_id;
    await this.deps.timers.dropStep(tx, ctx.run.id, stepId);
    const escalated = def.escalate_after_s !== undefined && (step.row.started_at ?? ctx.now) + def.escalate_after_s * 1000 <= ctx.now;
    await this.tell(tx, [...(def.notify ?? []), ...(escalated ? escalationChannels(def) : [])], {
      title: `${decision.title}: step ${stepId} of run ${ctx.run.id}`,
      text: decision.text,
      severity: 'info',
      link: this.runUrl(ctx),
      fields: [...this.facts(ctx, step), { name: 'Decided by', value: decision.by }],
    });
    const agent = startingAgent(ctx.run.created_by);
    if (agent !== null)
      messages.push({
        source: PLATFORM_SENDER,
        destination: agent,
        event_name: 'approval.decided',
        payload: { ...this.asked(ctx, step), status: step.row.status, decided_by: decision.by, decided_at: iso(ctx.now) },
      });
  }

  /** What a waiting step asks, as a notification (with its approval link), `prefix` saying why it is told again. */
  private asking(
    ctx: RunContext,
    step: StepState,
    def: StepTemplate,
    link: Linker | null,
    severity: Notification['severity'],
    prefix: string,
  ): Notification {
    const stepId = step.row.step_id;
    const asks = def.type === 'human_approval' ? 'Approval needed' : 'Input needed';
    const approvers = askedInput(step).approvers ?? [];
    const claim = linkClaim(ctx, step, null);
    return {
      title: `${prefix}${asks}: step ${stepId} of run ${ctx.run.id}`,
      text: askedInput(step).prompt ?? asks,
      severity,
      link: this.runUrl(ctx),
      fields: [
        ...this.facts(ctx, step),
        ...(approvers.length > 0 ? [{ name: 'Approvers', value: approvers.join(', ') }] : []),
        { name: 'Waiting since', value: iso(step.row.started_at ?? ctx.now) },
        { name: 'Expires', value: iso(claim.expiresAt) },
      ],
      ...(link && { human_step: { run_id: ctx.run.id, step_id: stepId, approve_url: link(claim) } }),
    };
  }

  private asked(ctx: RunContext, step: StepState): Record<string, unknown> {
    const { prompt, approvers } = askedInput(step);
    return { run_id: ctx.run.id, plan_id: ctx.run.plan_id, step_id: step.row.step_id, prompt: prompt ?? null, approvers: approvers ?? [] };
  }

  private facts(ctx: RunContext, step: StepState): { name: string; value: string }[] {
    return [
      { name: 'Run', value: ctx.run.id },
      { name: 'Plan', value: ctx.run.plan_id },
      { name: 'Step', value: step.row.step_id },
    ];
  }

  private runUrl(ctx: RunContext): string {
    return `${this.deps.publicUrl()}/api/v1/coordination/runs/${ctx.run.id}`;
  }

  /** Notifies the channels that still exist (a deleted one is logged, and does not stop the run). */
  private async tell(tx: Tx, channelIds: string[], notification: Notification): Promise<void> {
    if (channelIds.length === 0) return;
    const missing = new Set(await this.deps.channels.missing(tx, channelIds));
    if (missing.size > 0) this.deps.logger.warn({ channels: [...missing] }, 'a human step names deleted notification channels');
    const reachable = channelIds.filter((id) => !missing.has(id));
    if (reachable.length > 0) await this.deps.channels.notify(tx, reachable, notification);
  }
}

function hasNotices(def: StepTemplate): boolean {
  return def.notify !== undefined || def.escalate_to !== undefined;
}

/** A decision's entry in words: who decided, and what. */
function decisionInWords(entry: NewRunEvent, step: StepState): { title: string; by: string; text: string } {
  const detail = JSON.parse(entry.detail) as { decided_by?: string; by?: string; comment?: string | null };
  if (entry.type === 'step.input_received')
    return { title: `Input submitted by ${detail.by}`, by: detail.by!, text: 'The input was submitted; the run goes on.' };
  const approved = entry.type === 'step.approved';
  const output = stepOutput(step) as { comment?: string | null } | null;
  const comment = detail.comment ?? output?.comment ?? null;
  return {
    title: `${approved ? 'Approved' : 'Rejected'} by ${detail.decided_by}`,
    by: detail.decided_by!,
    text: `${approved ? 'Approved' : 'Rejected'} by ${detail.decided_by}${comment ? `: ${comment}` : '.'}`,
  };
}
