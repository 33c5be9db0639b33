import type { Logger } from 'pino';
import type { AgentDirectory } from '../kernel/ports.js';
import { validatePlan } from './plan.js';
import type { StepDefinition } from './plan-definition.js';

/**
 * Plan generation: a rule-based planner that needs no model — split the goal into
 * sub-goals, match each to a capability with discovery search, chain agent steps — and, when
 * an OpenAI-compatible endpoint is configured, a model-written plan that must pass the same
 * checks or the local plan is used instead.
 */

export interface GenerateRequest {
  goal: string;
  constraints?: { require_human_approval?: boolean; max_steps?: number; available_agents?: string[] };
}

export interface GeneratedPlan {
  steps: StepDefinition[];
  description: string;
  /** ISO 8601 duration. */
  estimated_duration: string;
  /** Sub-goals no capability matched (left out, never invented). */
  unmatched: string[];
  planner: 'local' | 'llm';
}

/** A discovery search score below this is no match for a sub-goal. */
export const MATCH_THRESHOLD = 0.15;
export const DEFAULT_MAX_STEPS = 10;
/** Duration of an agent step whose capability has no completed steps yet. */
export const DEFAULT_STEP_MS = 60_000;
/** Time a person is expected to take on an approval step. */
export const APPROVAL_MS = 3_600_000;
/** Verbs whose step changes something outside (the approval goes before the first of them). */
const SIDE_EFFECTS =
  /\b(send|sends|email|mail|post|publish|deploy|release|delete|remove|pay|charge|transfer|order|book|buy|purchase|submit|merge|notify|message|tweet|write|update|create|upload|commit|push|cancel|refund)\b/i;

interface Match {
  text: string;
  capability: string;
  agents: string[];
  score: number;
}

/** Splits a goal into sub-goals: numbered items, sentences, "then"/"and then", commas, semicolons. */
export function splitGoal(goal: string): string[] {
  return goal
    .split(/(?:^|\n|\s)\(?\d+[.)]\s+|[.!?;\n]+(?:\s|$)|,\s*(?:and\s+)?(?:then\s+)?|\s+(?:and\s+)?then\s+/i)
    .map((part) =>
      part
        .trim()
        .replace(/^(?:and|then|first|firstly|next|finally|lastly|after that|afterwards)\b[\s,]*/i, '')
        .replace(/[.!?,;:]+$/, '')
        .trim(),
    )
    .filter((part) => part.length > 0);
}

/** Milliseconds as an ISO 8601 duration (PT1H2M3S; at least PT1S). */
export function isoDuration(ms: number): string {
  let seconds = Math.max(1, Math.round(ms / 1000));
  const hours = Math.floor(seconds / 3600);
  seconds -= hours * 3600;
  const minutes = Math.floor(seconds / 60);
  seconds -= minutes * 60;
  return `PT${hours ? `${hours}H` : ''}${minutes ? `${minutes}M` : ''}${seconds || (!hours && !minutes) ? `${seconds}S` : ''}`;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

function stepId(capability: string, taken: Set<string>): string {
  const base =
    capability
      .replace(/[^A-Za-z0-9_-]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .slice(0, 50) || 'step';
  let id = base;
  for (let n = 2; taken.has(id); n++) id = `${base}_${n}`;
  taken.add(id);
  return id;
}

export interface PlannerDeps {
  directory: AgentDirectory;
  /** Recent durations (ms) of completed agent steps per capability. */
  durations(capabilities: string[]): Promise<Map<string, number[]>>;
  llm: { url: string; model: string; apiKey: string | null } | null;
  logger: Logger;
}

export class Planner {
  constructor(private readonly deps: PlannerDeps) {}

  async generate(request: GenerateRequest): Promise<GeneratedPlan> {
    const local = await this.local(request);
    if (!this.deps.llm) return local;
    try {
      const drafted = await this.fromModel(request);
      if (drafted) return { ...drafted, estimated_duration: await this.estimate(drafted.steps), unmatched: [], planner: 'llm' };
    } catch (err) {
      this.deps.logger.warn({ err }, 'plan generation endpoint failed; using the local planner');
    }
    return local;
  }

  private async match(text: string, available: Set<string> | null): Promise<Match | null> {
    const hits = await this.deps.directory.search({ query: text, top_k: 50, min_score: MATCH_THRESHOLD });
    const usable = hits.filter((h) => available === null || available.has(h.capability.agent_id));
    const best = usable[0];
    if (!best) return null;
    const agents = [...new Set(usable.filter((h) => h.capability.name === best.capability.name).map((h) => h.capability.agent_id))];
    return { text, capability: best.capability.name, agents, score: best.similarity_score };
  }

  private async local(request: GenerateRequest): Promise<GeneratedPlan> {
    const constraints = request.constraints ?? {};
    const available = constraints.available_agents ? new Set(constraints.available_agents) : null;
    const approval = constraints.require_human_approval === true;
    const maxSteps = constraints.max_steps ?? DEFAULT_MAX_STEPS;
    const matches: Match[] = [];
    const unmatched: string[] = [];
    for (const part of splitGoal(request.goal)) {
      const found = await this.match(part, available);
      if (found) matches.push(found);
      else unmatched.push(part);
    }
    // Over the budget: fold the least relevant sub-goal into its neighbour until it fits.
    const budget = Math.max(1, maxSteps - (approval ? 1 : 0));
    while (matches.length > budget) {
      let weakest = 0;
      for (let i = 1; i < matches.length; i++) if (matches[i]!.score < matches[weakest]!.score) weakest = i;
      const into = weakest > 0 ? weakest - 1 : 1;
      const [removed] = matches.splice(weakest, 1);
      const target = matches[weakest > 0 ? into : 0]!;
      target.text = weakest > 0 ? `${target.text}; ${removed!.text}` : `${removed!.text}; ${target.text}`;
    }

    const taken = new Set<string>();
    const steps: StepDefinition[] = [];
    const firstEffect = matches.findIndex((m) => SIDE_EFFECTS.test(m.text) || SIDE_EFFECTS.test(m.capability));
    const gateIndex = !approval || matches.length === 0 ? -1 : firstEffect >= 0 ? firstEffect : matches.length - 1;
    let previous: string | null = null;
    let lastAgent: string | null = null;
    // The capability each agent step was matched to, also when it names its one agent.
    const capabilityOf = new Map<string, string>();
    matches.forEach((m, i) => {
      if (i === gateIndex) {
        const id = stepId('approval', taken);
        steps.push({ id, type: 'human_approval', prompt: `Approve the next step: ${m.text}`, ...(previous && { depends_on: [previous] }) });
        previous = id;
      }
      const id = stepId(m.capability, taken);
      capabilityOf.set(id, m.capability);
      steps.push({
        id,
        type: 'agent',
        // One qualifying agent is named; several are left to discovery when the step starts.
        ...(m.agents.length === 1 ? { agent: m.agents[0]! } : { capability: m.capability }),
        input: { instruction: m.text, data: lastAgent ? `{{steps.${lastAgent}.output}}` : '{{input}}' },
        ...(previous && { depends_on: [previous] }),
      });
      previous = id;
      lastAgent = id;
    });
    return {
      steps,
      description: `Generated from the goal: ${request.goal.trim().slice(0, 500)}`,
      estimated_duration: await this.estimate(steps, capabilityOf),
      unmatched,
      planner: 'local',
    };
  }

  /**
   * Sum of the steps' expected durations (they run in sequence): the median of the capability's
   * measured past steps, else the defaults. `capabilityOf` names the capability of steps that
   * name their agent instead.
   */
  private async estimate(steps: StepDefinition[], capabilityOf: Map<string, string> = new Map()): Promise<string> {
    const capability = (step: StepDefinition) => step.capability ?? capabilityOf.get(step.id);
    const capabilities = [...new Set(steps.flatMap((s) => (s.type === 'agent' && capability(s) ? [capability(s)!] : [])))];
    const measured = await this.deps.durations(capabilities);
    let total = 0;
    for (const step of steps) {
      if (step.type === 'human_approval' || step.type === 'human_input') total += APPROVAL_MS;
      else if (step.type === 'agent') {
        const name = capability(step);
        const samples = name ? (measured.get(name) ?? []) : [];
        total += samples.length > 0 ? median(samples) : DEFAULT_STEP_MS;
      }
    }
    return isoDuration(total);
  }

  /** Asks the configured chat endpoint; returns null when its answer is not a valid plan. */
  private async fromModel(request: GenerateRequest): Promise<{ steps: StepDefinition[]; description: string } | null> {
    const llm = this.deps.llm!;
    const available = request.constraints?.available_agents ? new Set(request.constraints.available_agents) : null;
    const hits = (await this.deps.directory.search({ query: request.goal, top_k: 50, min_score: 0 })).filter(
      (h) => available === null || available.has(h.capability.agent_id),
    );
    const catalogue = hits.map((h) => ({
      capability: h.capability.name,
      agent: h.capability.agent_id,
      description: h.capability.metadata.description ?? null,
    }));
    const response = await fetch(`${llm.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(llm.apiKey ? { authorization: `Bearer ${llm.apiKey}` } : {}) },
      body: JSON.stringify({
        model: llm.model,
        temperature: 0,
        response_format: { type: 'json_object' },
        messages: [
          {
            role: 'system',
            content:
              'You write workflow plans as JSON: {"description": string, "steps": [{"id", "type": "agent"|"human_approval", "agent"?, "capability"?, ' +
              '"prompt"?, "input"?, "depends_on"?}]}. Use only the capabilities and agents listed. Chain steps with depends_on; ' +
              'an input value may be "{{steps.<id>.output}}" of a step it depends on, or "{{input}}".' +
              (request.constraints?.require_human_approval ? ' Put a human_approval step before the first step with side effects.' : '') +
              ` At most ${request.constraints?.max_steps ?? DEFAULT_MAX_STEPS} steps.`,
          },
          { role: 'user', content: JSON.stringify({ goal: request.goal, capabilities: catalogue }) },
        ],
      }),
      signal: AbortSignal.timeout(30_000),
    });
    if (!response.ok) throw new Error(`plan endpoint answered ${response.status}`);
    const body = (await response.json()) as { choices?: { message?: { content?: string } }[] };
    const content = body.choices?.[0]?.message?.content;
    if (typeof content !== 'string') return null;
    let draft: { description?: unknown; steps?: unknown };
    try {
      draft = JSON.parse(content) as typeof draft;
    } catch {
      return null;
    }
    if (!Array.isArray(draft.steps) || draft.steps.length === 0) return null;
    const steps = draft.steps as StepDefinition[];
    const known = new Set(catalogue.map((c) => c.capability));
    const agents = new Set(catalogue.map((c) => c.agent));
    const wellFormed = steps.every(
      (s) =>
        typeof s === 'object' &&
        s !== null &&
        typeof s.id === 'string' &&
        /^[A-Za-z0-9_-]{1,64}$/.test(s.id) &&
        (s.type === 'human_approval'
          ? typeof s.prompt === 'string'
          : s.type === 'agent' && (s.capability ? known.has(s.capability) : agents.has(s.agent ?? ''))),
    );
    const approvalMissing = request.constraints?.require_human_approval === true && !steps.some((s) => s.type === 'human_approval');
    if (
      !wellFormed ||
      approvalMissing ||
      steps.length > (request.constraints?.max_steps ?? DEFAULT_MAX_STEPS) ||
      validatePlan({ steps }).length > 0
    ) {
      this.deps.logger.warn({ answer: content.slice(0, 2000) }, 'the generated plan is invalid; using the local planner');
      return null;
    }
    return { steps, description: typeof draft.description === 'string' ? draft.description : `Generated from the goal: ${request.goal}` };
  }
}
