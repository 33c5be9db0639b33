import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import type { Item, Result } from '../../../src/client/browser.js';
import { ErrorNotice } from '../errors.js';
import { useLiveRefresh } from '../live.js';
import { queryKeys } from '../query-keys.js';
import { useSession } from '../session.js';
import './usage.css';

type Budget = Item<'budgets.list'>;
type ScopePause = Result<'budgets.pauses'>[number];
/** A scope's pause: the budget that paused it, and when it ends (null: at a resume). */
export type BudgetPause = Pick<ScopePause, 'budget_id' | 'until'>;

/** A budget crossing its limits, paused or resumed is an event: the list and the paused badges follow it. */
export const BUDGET_EVENTS = ['budget.*'];
/** Paused budgets read at most: each pauses one scope, and a team keeps a few budgets. */
const PAUSES_READ = 100;
/**
 * Budget events reach budgets:admin only (and an agent its own budget's): the others look again
 * at what is paused this often.
 */
const PAUSES_POLL_MS = 30_000;

/** What budgets pause now, each scope with its pause. */
export interface Pauses {
  agent: ReadonlyMap<string, BudgetPause>;
  capability: ReadonlyMap<string, BudgetPause>;
  plan: ReadonlyMap<string, BudgetPause>;
  /** A global budget pauses every agent. */
  global: BudgetPause | null;
}

const NONE: Pauses = { agent: new Map(), capability: new Map(), plan: new Map(), global: null };

function pausesOf(pauses: readonly ScopePause[]): Pauses {
  const byKind = (kind: ScopePause['scope']['kind']) =>
    new Map(pauses.filter((pause) => pause.scope.kind === kind).map((pause) => [pause.scope.value ?? '', pause]));
  return {
    agent: byKind('agent'),
    capability: byKind('capability'),
    plan: byKind('plan'),
    global: pauses.find((pause) => pause.scope.kind === 'global') ?? null,
  };
}

/** What budgets pause now (`GET /budgets/pauses`, which whoever reads plans may read). */
export function usePauses(): Pauses {
  const { client, can } = useSession();
  useLiveRefresh({ queryKey: queryKeys.budgets.all, events: BUDGET_EVENTS });
  const paused = useQuery({
    queryKey: queryKeys.budgets.pauses(),
    queryFn: () => client.budgets.pauses(),
    enabled: can('plans:read'),
    refetchInterval: can('budgets:admin') ? false : PAUSES_POLL_MS,
    select: pausesOf,
  });
  return paused.data ?? NONE;
}

/** The budgets pausing something, by id: their names and a Resume, for budgets:admin (who reads budgets) only. */
function usePausingBudgets(): ReadonlyMap<string, Budget> {
  const { client, can } = useSession();
  const paused = useQuery({
    queryKey: queryKeys.budgets.paused(),
    queryFn: () => client.budgets.list.page({ query: { state: 'paused', limit: PAUSES_READ } }),
    enabled: can('budgets:admin'),
    select: (page) => new Map(page.items.map((budget) => [budget.id, budget])),
  });
  return paused.data ?? new Map<string, Budget>();
}

/** Whether a budget pauses the agent, itself or with every agent. */
export function agentPaused(pauses: Pauses, agentId: string): boolean {
  return pauses.global !== null || pauses.agent.has(agentId);
}

/** The badge of an agent a budget paused. */
export function PausedBadge({ paused }: { paused: boolean }) {
  if (!paused) return null;
  return (
    <span className="badge health-unhealthy" title="A budget paused this agent: its inbox holds its messages until it resumes">
      paused
    </span>
  );
}

/** Resumes what a budget paused, for the rest of its period. */
export function ResumeButton({ budget, label = 'Resume' }: { budget: Budget; label?: string }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const resume = useMutation({
    mutationFn: () => client.budgets.resume({ path: { id: budget.id } }),
    // Plans' and capabilities' answers say what is paused too.
    onSuccess: () =>
      Promise.all(
        [queryKeys.budgets.all, queryKeys.plans.all, queryKeys.agents.all].map((queryKey) => queryClient.invalidateQueries({ queryKey })),
      ),
  });
  return (
    <>
      <button type="button" disabled={resume.isPending} onClick={() => resume.mutate()}>
        {label}
      </button>
      <ErrorNotice error={resume.error} />
    </>
  );
}

/** When a pause ends, as a person reads it. */
function untilText(pause: BudgetPause): string {
  return pause.until === null ? 'until it resumes' : `until ${new Date(pause.until).toLocaleString()} (its period's end) or a resume`;
}

/**
 * A plan or capability a budget paused: the badge and, for budgets:admin (who reads budgets), a
 * link to its budget and a Resume; `compact` (in a list of chips): the badge alone. Nothing when
 * no budget pauses it.
 */
export function PausedByBudget({
  pause,
  what,
  label = 'paused by budget',
  compact = false,
}: {
  pause: BudgetPause | null | undefined;
  what: string;
  label?: string;
  compact?: boolean;
}) {
  const budgets = usePausingBudgets();
  if (!pause) return null;
  const budget = budgets.get(pause.budget_id);
  const badge = (
    <span
      className="badge health-unhealthy"
      title={`${budget ? `Budget ${budget.name}` : 'A budget'} paused this ${what}: its steps wait ${untilText(pause)}`}
      data-paused-by={compact ? pause.budget_id : undefined}
    >
      {label}
    </span>
  );
  if (compact) return <> {badge}</>;
  return (
    <span className="paused-by-budget" data-paused-by={pause.budget_id}>
      {badge}
      {budget && (
        <>
          {' '}
          <Link to="/settings/budgets" hash={budget.id}>
            {budget.name}
          </Link>{' '}
          <ResumeButton budget={budget} label={`Resume ${what}`} />
        </>
      )}
    </span>
  );
}

/** Across the console while a global budget pauses every agent; its budget and Resume for budgets:admin. */
export function GlobalPauseBanner() {
  const { global } = usePauses();
  const budgets = usePausingBudgets();
  if (global === null) return null;
  const budget = budgets.get(global.budget_id);
  return (
    <div className="notice error" role="status" data-testid="global-pause">
      <p>
        <strong>Every agent is paused by budget</strong>
        {budget && (
          <>
            {' '}
            <Link to="/settings/budgets" hash={budget.id}>
              {budget.name}
            </Link>
          </>
        )}
        : inboxes hold their messages and plan steps wait until it resumes
        {global.until && (
          <>
            {' '}
            (its period ends <time dateTime={global.until}>{new Date(global.until).toLocaleString()}</time>)
          </>
        )}
        .
      </p>
      {budget && <ResumeButton budget={budget} label="Resume every agent" />}
    </div>
  );
}
