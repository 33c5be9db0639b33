import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** Distinct event name classes counted by name; the rest count as `other` (bounded label sets). */
const MAX_EVENT_CLASSES = 50;
/** Rules whose firing alerts get their own series; the rest are summed under rule="other" by severity. */
export const TOP_ALERT_RULES = 50;
/** Agents whose inbox gets its own series; the rest are summed under `other`. */
export const TOP_INBOXES = 20;
/** Agents and models whose usage gets its own series (the first seen by this node); the rest count as `other`. */
const MAX_USAGE_AGENTS = 50;
const MAX_USAGE_MODELS = 20;
const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

export type SettleOutcome = 'acked' | 'rejected' | 'dead_lettered';
export type FinishedRunStatus = 'completed' | 'failed' | 'cancelled';
export type WebhookOutcome = 'delivered' | 'failed' | 'gave_up';

/** One agent's inbox for the depth gauges. */
export interface InboxDepth {
  agent_id: string;
  pending: number;
  oldest_pending_age_seconds: number | null;
}

/** What the scrape-time gauges read (the composition root wires them to the domains). */
export interface MetricSources {
  /** The deepest inboxes first, at least TOP_INBOXES + 1 of them when there are that many. */
  inboxes(): Promise<InboxDepth[]>;
  agentsByHealth(): Promise<Record<string, number>>;
  /** Firing alerts by rule id and severity (at most one per rule). */
  alertsFiring(): Promise<{ rule_id: string; severity: string; n: number }[]>;
  /** Runs held back by why: queued by a concurrency or rate limit, or waiting for an agent (no_agent). */
  runsBlocked(): Promise<Record<string, number>>;
  /** Pending messages waiting behind an earlier unsettled message of their ordering key. */
  messagesHeld(): Promise<number>;
}

/**
 * The domain metrics (Prometheus names: `switchboard_…_total` counters, `_seconds`
 * histograms). Services count through it; gauges are read from the stores when scraped.
 */
export class DomainMetrics {
  private readonly classes = new Set<string>();
  private readonly messages: Counter<'outcome' | 'class'>;
  private readonly sent: Counter<'class'>;
  private readonly queued: Histogram<'origin'>;
  private readonly runsStarted: Counter;
  private readonly runsFinished: Counter<'status'>;
  private readonly steps: Histogram<'status'>;
  private readonly fireLag: Histogram;
  private readonly webhooks: Counter<'outcome'>;
  private readonly notifications: Counter<'channel_type' | 'outcome'>;
  private readonly retention: Counter<'table'>;
  private readonly usageTokens: Counter<'agent' | 'model' | 'kind'>;
  private readonly usageCost: Counter<'agent' | 'model'>;
  private readonly usageAgents = new Set<string>();
  private readonly usageModels = new Set<string>();

  constructor(registry: Registry) {
    const registers = [registry];
    this.sent = new Counter({
      name: 'switchboard_messages_sent_total',
      help: 'Messages sent, by event name class (its first token)',
      labelNames: ['class'],
      registers,
    });
    this.messages = new Counter({
      name: 'switchboard_messages_settled_total',
      help: 'Messages acknowledged, rejected (requeued) or dead-lettered, by event name class',
      labelNames: ['outcome', 'class'],
      registers,
    });
    this.queued = new Histogram({
      name: 'switchboard_message_queued_seconds',
      help: 'From a send to the first delivery of the message (queued-to-started), by origin (plan_step, routine_execution, direct)',
      labelNames: ['origin'],
      buckets: SECONDS_BUCKETS,
      registers,
    });
    this.runsStarted = new Counter({ name: 'switchboard_runs_started_total', help: 'Runs started', registers });
    this.runsFinished = new Counter({
      name: 'switchboard_runs_finished_total',
      help: 'Runs finished, by status',
      labelNames: ['status'],
      registers,
    });
    this.steps = new Histogram({
      name: 'switchboard_run_step_duration_seconds',
      help: 'From a step starting to it completing or failing, by status',
      labelNames: ['status'],
      buckets: SECONDS_BUCKETS,
      registers,
    });
    this.fireLag = new Histogram({
      name: 'switchboard_routine_fire_lag_seconds',
      help: 'From a cron slot to its fire',
      buckets: SECONDS_BUCKETS,
      registers,
    });
    this.webhooks = new Counter({
      name: 'switchboard_webhook_deliveries_total',
      help: 'Webhook delivery attempts, by outcome',
      labelNames: ['outcome'],
      registers,
    });
    this.notifications = new Counter({
      name: 'switchboard_notifications_total',
      help: 'Notification attempts by channel type and outcome: delivered, failed (retried), gave_up (after 24 h); an agent channel counts delivered when the message is in the inbox',
      labelNames: ['channel_type', 'outcome'],
      registers,
    });
    this.retention = new Counter({
      name: 'switchboard_retention_deleted_total',
      help: 'Rows the retention worker deleted, by table',
      labelNames: ['table'],
      registers,
    });
    this.usageTokens = new Counter({
      name: 'switchboard_usage_tokens_total',
      help: `Tokens agents reported, by agent, model and kind (input, output); ${MAX_USAGE_AGENTS} agents and ${MAX_USAGE_MODELS} models, the rest as "other"`,
      labelNames: ['agent', 'model', 'kind'],
      registers,
    });
    this.usageCost = new Counter({
      name: 'switchboard_usage_cost_usd_total',
      help: `Cost agents reported in US dollars, by agent and model; ${MAX_USAGE_AGENTS} agents and ${MAX_USAGE_MODELS} models, the rest as "other"`,
      labelNames: ['agent', 'model'],
      registers,
    });
  }

  /** Adds the gauges read at scrape time. */
  observe(registry: Registry, sources: MetricSources): void {
    const registers = [registry];
    new Gauge({
      name: 'switchboard_inbox_depth',
      help: `Pending messages per agent (the ${TOP_INBOXES} deepest inboxes, the rest as agent="other")`,
      labelNames: ['agent'],
      registers,
      async collect() {
        this.reset();
        for (const [agent, value] of topAndOther(
          await sources.inboxes(),
          (inbox) => inbox.pending,
          (a, b) => a + b,
        ))
          this.set({ agent }, value);
      },
    });
    new Gauge({
      name: 'switchboard_inbox_oldest_pending_age_seconds',
      help: `Age of the oldest pending message per agent (the ${TOP_INBOXES} deepest inboxes, the rest as agent="other": their oldest)`,
      labelNames: ['agent'],
      registers,
      async collect() {
        this.reset();
        for (const [agent, value] of topAndOther(await sources.inboxes(), (inbox) => inbox.oldest_pending_age_seconds ?? 0, Math.max))
          this.set({ agent }, value);
      },
    });
    new Gauge({
      name: 'switchboard_agents',
      help: 'Registered agents by health',
      labelNames: ['health'],
      registers,
      async collect() {
        for (const [health, count] of Object.entries(await sources.agentsByHealth())) this.set({ health }, count);
      },
    });
    new Gauge({
      name: 'switchboard_runs_blocked',
      help: "Runs held back: queued by their plan's concurrency or rate limit, or waiting for an agent with a step's capability",
      labelNames: ['blocked_by'],
      registers,
      async collect() {
        for (const [blockedBy, count] of Object.entries(await sources.runsBlocked())) this.set({ blocked_by: blockedBy }, count);
      },
    });
    new Gauge({
      name: 'switchboard_messages_held',
      help: 'Pending messages held back by their ordering key (an earlier message of the key and inbox is not settled yet)',
      labelNames: ['blocked_by'],
      registers,
      async collect() {
        this.set({ blocked_by: 'ordering_key' }, await sources.messagesHeld());
      },
    });
    new Gauge({
      name: 'switchboard_alerts_firing',
      help: `Firing alerts by rule id and severity (${TOP_ALERT_RULES} rules, the rest as rule="other")`,
      labelNames: ['rule', 'severity'],
      registers,
      async collect() {
        this.reset();
        const firing = (await sources.alertsFiring()).sort((a, b) => a.rule_id.localeCompare(b.rule_id));
        const series = new Map<string, { rule: string; severity: string; n: number }>();
        firing.forEach(({ rule_id, severity, n }, i) => {
          const rule = i < TOP_ALERT_RULES ? rule_id : 'other';
          const key = `${rule}\u0000${severity}`;
          series.set(key, { rule, severity, n: (series.get(key)?.n ?? 0) + n });
        });
        for (const { rule, severity, n } of series.values()) this.set({ rule, severity }, n);
      },
    });
  }

  messagesSent(eventNames: readonly string[]): void {
    for (const name of eventNames) this.sent.inc({ class: this.classOf(name) });
  }

  messagesSettled(outcome: SettleOutcome, eventNames: readonly string[]): void {
    for (const name of eventNames) this.messages.inc({ outcome, class: this.classOf(name) });
  }

  messageQueued(origin: string | null, seconds: number): void {
    this.queued.observe({ origin: origin ?? 'direct' }, Math.max(0, seconds));
  }

  runStarted(): void {
    this.runsStarted.inc();
  }

  runFinished(status: FinishedRunStatus): void {
    this.runsFinished.inc({ status });
  }

  stepFinished(status: 'completed' | 'failed', seconds: number): void {
    this.steps.observe({ status }, Math.max(0, seconds));
  }

  routineFired(lagSeconds: number): void {
    this.fireLag.observe(Math.max(0, lagSeconds));
  }

  webhookDelivery(outcome: WebhookOutcome): void {
    this.webhooks.inc({ outcome });
  }

  notification(channelType: string, outcome: WebhookOutcome): void {
    this.notifications.inc({ channel_type: channelType, outcome });
  }

  retentionDeleted(table: string, rows: number): void {
    this.retention.inc({ table }, rows);
  }

  /** `plan` of `plan.step.execute`; past MAX_EVENT_CLASSES distinct classes, `other`. */
  usageRecorded(usage: { agent_id: string; model: string; input_tokens: number; output_tokens: number; cost_usd?: number }): void {
    const labels = {
      agent: bounded(this.usageAgents, MAX_USAGE_AGENTS, usage.agent_id),
      model: bounded(this.usageModels, MAX_USAGE_MODELS, usage.model),
    };
    this.usageTokens.inc({ ...labels, kind: 'input' }, usage.input_tokens);
    this.usageTokens.inc({ ...labels, kind: 'output' }, usage.output_tokens);
    this.usageCost.inc(labels, usage.cost_usd ?? 0);
  }

  private classOf(eventName: string): string {
    const dot = eventName.indexOf('.');
    const first = dot === -1 ? eventName : eventName.slice(0, dot);
    if (this.classes.has(first)) return first;
    if (this.classes.size >= MAX_EVENT_CLASSES) return 'other';
    this.classes.add(first);
    return first;
  }
}

/** `value` when `seen` has it or has room for it (then it is added), else `other`. */
function bounded(seen: Set<string>, max: number, value: string): string {
  if (seen.has(value)) return value;
  if (seen.size >= max) return 'other';
  seen.add(value);
  return value;
}

/** The first TOP_INBOXES inboxes by agent, and the rest folded into `other` with `fold`. */
export function topAndOther(
  inboxes: InboxDepth[],
  value: (inbox: InboxDepth) => number,
  fold: (a: number, b: number) => number,
): Map<string, number> {
  const series = new Map<string, number>();
  inboxes.forEach((inbox, i) => {
    if (i < TOP_INBOXES) series.set(inbox.agent_id, value(inbox));
    else series.set('other', fold(series.get('other') ?? 0, value(inbox)));
  });
  return series;
}
