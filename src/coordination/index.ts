import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { StepRefs } from './step-refs.js';
import { autocommit } from '../kernel/tx.js';
import type { Platform } from '../platform.js';
import type { AgentDirectory, ClaimChecks, EventLog, Inbox, OutcomeHandler, PublishListener } from '../kernel/ports.js';
import type { AgentPauses, PausedScopes } from '../kernel/usage-ports.js';
import { HmacSigner } from '../kernel/hmac-signer.js';
import { LoopWorker } from '../workers/loop-worker.js';
import { DISCOVERY_CHANGED } from '../discovery/service.js';
import { ApprovalLinks } from './approval-links.js';
import { ApprovalNotices, LateBoundChannels, type ApprovalChannels } from './approval-notices.js';
import { ApprovalTimerStore } from './approval-timer-store.js';
import { ApprovalTimers } from './approval-timers.js';
import type { People } from './approvers.js';
import { COORDINATION_CHANGED, RunEngine } from './engine.js';
import { HumanDecisionService } from './human-decisions.js';
import { PlanService } from './plan-service.js';
import { PlanStore } from './plan-store.js';
import { coordinationRoutes, type CoordinationServices } from './routes.js';
import { runRetention } from './retention.js';
import { RunRetentionStore } from './retention-store.js';
import { RunService } from './run-service.js';
import { RunStore } from './run-store.js';
import { CheckpointService } from './checkpoints.js';
import { continueFromLetter } from './letter-redrive.js';
import { StepLogService } from './step-logs.js';
import { stepWorkRoutes } from './step-routes.js';
import { RunRerun } from './rerun.js';
import { rerunRoutes } from './rerun-routes.js';
import { StepWorkStore } from './step-work-store.js';
import { RunLimitsStore } from './run-limits-store.js';
import { Planner } from './planner.js';
import { TriggerStore } from './trigger-store.js';
import { DEBOUNCE_BEGUN, TriggerFiring } from './trigger-firing.js';
import { DebounceStore } from '../debounce/store.js';
import { TriggersService } from './triggers.js';

export { callerOf } from './caller.js';
export { parseAttemptRef } from './steps/index.js';
export type { Plan } from './plan-service.js';
export type { Run, RunEvent } from './run-service.js';
export type { CoordinationServices } from './routes.js';
export type { HumanDecisionService } from './human-decisions.js';
export type { ApprovalChannels } from './approval-notices.js';

/** The setting whose secret signs approval links. */
export const APPROVAL_LINK_SETTING = 'approval_link_key';

const NOTHING_PAUSED: PausedScopes = { none: true, agent: () => false, capability: () => false, plan: () => false, pauseOf: () => null };

/** The timer sleeps at most this long, so a lost wake-up costs at most a minute. */
const MAX_SLEEP_MS = 60_000;

export function createCoordinationDomain(deps: {
  events: EventLog;
  platform: Platform;
  inbox: Inbox;
  directory: AgentDirectory;
  onPublish: (listener: PublishListener) => void;
  /**
   * The cluster-wide secret (auth's setting APPROVAL_LINK_SETTING) that signs approval links,
   * read before any transaction: on SQLite a read outside a transaction would wait for it.
   */
  approvalLinkKey: string;
  /** The users approvers name, for links that decide as one of them. */
  people: People;
}) {
  const { platform } = deps;
  const { db, caps } = platform.database;
  const [plans, store, triggerStore] = [new PlanStore(db, caps), new RunStore(db, caps), new TriggerStore(db, caps)];
  const stepWork = new StepWorkStore(db, caps);
  const links = new ApprovalLinks(new HmacSigner(() => Promise.resolve(deps.approvalLinkKey)), platform.publicUrl);
  let timerPlannedAt = 0;
  const limits = new RunLimitsStore(db, caps);
  const channels = new LateBoundChannels();
  // Budgets (usage) are built after coordination: until bound, nothing is paused.
  let pauses: AgentPauses | null = null;
  const pausesNow: AgentPauses = { pauses: (tx) => (pauses === null ? Promise.resolve(NOTHING_PAUSED) : pauses.pauses(tx)) };
  const timerStore = new ApprovalTimerStore(db, caps);
  const notices = new ApprovalNotices({
    timers: timerStore,
    channels,
    inbox: deps.inbox,
    publicUrl: platform.publicUrl,
    logger: platform.logger,
    // As the engine does for runs' timers: only a timer before the worker's next look (or during a pass) wakes it.
    wakeTimer: async (tx, dueAt) => {
      if (timerPlannedAt === 0 || dueAt < timerPlannedAt) await platform.notifier.notifyIn(tx, COORDINATION_CHANGED);
    },
  });
  const refs = new StepRefs(platform.config.inlinePayloadBytes);
  const engine = new RunEngine({
    store,
    limits,
    plans,
    checkpoints: stepWork,
    inbox: deps.inbox,
    directory: deps.directory,
    pauses: pausesNow,
    events: deps.events,
    links,
    clock: platform.clock,
    notifier: platform.notifier,
    logger: platform.logger,
    metrics: platform.metrics,
    expressions: platform.expressions,
    timerPlannedAt: () => timerPlannedAt,
    notices,
    refs,
  });
  const approvalTimers = new ApprovalTimers({ store: timerStore, engine, clock: platform.clock });
  const { clock, notifier, audit } = platform;
  const coordination = new RunService({ runs: store, limits, plans, engine, clock, audit, refs });
  const services: CoordinationServices = {
    plans: new PlanService({ plans, clock, notifier, audit, pauses: pausesNow }),
    runs: coordination,
    decisions: new HumanDecisionService({ runs: store, engine, clock, links, audit, people: deps.people, refs }),
  };
  const firing = new TriggerFiring({
    triggers: triggerStore,
    debounces: new DebounceStore(db, caps, 'trigger'),
    plans,
    engine,
    clock,
    expressions: platform.expressions,
    audit,
    notifier,
  });
  const triggers = new TriggersService({ triggers: triggerStore, plans, clock, notifier, audit, firing });
  const { llmUrl, llmModel, llmApiKey } = platform.config;
  const planner = new Planner({
    directory: deps.directory,
    durations: (capabilities) => store.stepDurations(autocommit, capabilities),
    llm: llmUrl !== null && llmModel !== null ? { url: llmUrl, model: llmModel, apiKey: llmApiKey } : null,
    logger: platform.logger,
  });
  /** Hears of `plan_step` messages (kernel/ports.ts `OutcomeHandlers`): agents' acknowledgements and dead letters move runs. */
  const outcomeHandler: OutcomeHandler = {
    delivered: false,
    handle: async (tx, outcomes) => {
      await engine.onOutcomes(tx, outcomes);
      await refs.holdOutputs(tx, outcomes);
    },
    redriven: (tx, letter) => continueFromLetter(tx, { store: stepWork, engine }, letter),
  };
  deps.onPublish(async (publication) => {
    await firing.onEvent(publication);
    await coordination.handleEvent(publication);
  });

  // Step timeouts, retry backoff, waits, approval deadlines and schedule triggers: one pass
  // handles what is due, then sleeps until the next due time (or a nudge from any node).
  let lastPrune = 0;
  let agentsChanged = false;
  const timer = new LoopWorker({
    name: 'run-timer',
    intervalMs: MAX_SLEEP_MS,
    logger: platform.logger,
    wakeOn: { notifier: platform.notifier, channel: COORDINATION_CHANGED, onNotice: () => firing.invalidate() },
    // An agent that registers releases the steps waiting for its capability.
    listen: (nudge) => {
      const unlisten = [
        platform.notifier.listen(DISCOVERY_CHANGED, () => {
          agentsChanged = true;
          nudge();
        }),
        platform.notifier.listen(DEBOUNCE_BEGUN, nudge),
      ];
      return () => unlisten.forEach((stop) => stop());
    },
    run: async () => {
      timerPlannedAt = 0;
      if (agentsChanged) {
        agentsChanged = false;
        await coordination.agentsChanged();
      }
      await firing.fireDue();
      await firing.fireDebounced();
      await coordination.wakeDue();
      const more = await approvalTimers.fireDue();
      if (platform.clock.now() - lastPrune >= MAX_SLEEP_MS) {
        lastPrune = platform.clock.now();
        await firing.pruneFires();
      }
      if (more) return 0;
      const times = [await coordination.nextWakeAt(), await firing.nextFireAt(), await approvalTimers.nextDueAt()].filter(
        (t): t is number => t !== null,
      );
      const now = platform.clock.now();
      const sleep = times.length === 0 ? MAX_SLEEP_MS : Math.min(MAX_SLEEP_MS, Math.max(0, Math.min(...times) - now));
      timerPlannedAt = now + sleep;
      return sleep;
    },
  });
  return {
    service: services,
    triggers,
    outcomeHandler,
    routes: (async (app) => {
      await app.register(coordinationRoutes(services, { triggers, firing }, planner));
      const maxReplay = platform.config.replayMaxRuns;
      await app.register(rerunRoutes(new RunRerun({ runs: store, plans, engine, audit, refs }, maxReplay), maxReplay));
      await app.register(
        stepWorkRoutes({
          checkpoints: new CheckpointService({ store: stepWork, inbox: deps.inbox, clock }),
          logs: new StepLogService({ store: stepWork, events: deps.events, clock }),
        }),
      );
    }) satisfies FastifyPluginAsyncTypebox,
    workers: [timer],
    /** Binds the notification channels human steps tell (notifications is built after coordination). */
    bindChannels: (implementation: ApprovalChannels) => channels.bind(implementation),
    /** Binds what budgets pause: agent steps for a paused agent, capability or plan wait. */
    pauseStepsWith: (implementation: AgentPauses) => {
      pauses = implementation;
    },
    retention: runRetention(new RunRetentionStore(db, caps), refs, platform.config.runRetentionDays),
    /** Where large step outputs and inputs go (artifacts, built after coordination). */
    useClaimChecks: (checks: ClaimChecks) => refs.useClaimChecks(checks),
  };
}
