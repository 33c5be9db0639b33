import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import type { Item } from '../../../src/client/browser.js';
import { ErrorNotice } from '../errors.js';
import { useLiveRefresh } from '../live.js';
import { queryKeys } from '../query-keys.js';
import { useSession } from '../session.js';
import './usage.css';

type Budget = Item<'budgets.list'>;

/** A budget crossing its limits, paused or resumed is an event: the list and the paused badges follow it. */
export const BUDGET_EVENTS = ['budget.*'];
/** Paused budgets read at most: each pauses one scope, and a team keeps a few budgets. */
const PAUSES_READ = 100;

/** What budgets pause now, each scope with the budget that pauses it. */
export interface Pauses {
  agent: ReadonlyMap<string, Budget>;
  capability: ReadonlyMap<string, Budget>;
  plan: ReadonlyMap<string, Budget>;
  /** A global budget pauses every agent. */
  global: Budget | null;
}

const NONE: Pauses = { agent: new Map(), capability: new Map(), plan: new Map(), global: null };

function pausesOf(budgets: readonly Budget[]): Pauses {
  const byKind = (kind: Budget['scope']['kind']) =>
    new Map(budgets.filter((budget) => budget.scope.kind === kind).map((budget) => [budget.scope.value ?? '', budget]));
  return {
    agent: byKind('agent'),
    capability: byKind('capability'),
    plan: byKind('plan'),
    global: budgets.find((budget) => budget.scope.kind === 'global') ?? null,
  };
}

/**
 * What budgets pause now (the budgets list's `state=paused`). Only a budgets:admin principal may
 * read budgets: for anyone else nothing is known paused here (lookups still flag paused agents).
 */
export function usePauses(): Pauses {
  const { client, can } = useSession();
  useLiveRefresh({ queryKey: queryKeys.budgets.all, events: BUDGET_EVENTS });
  const paused = useQuery({
    queryKey: queryKeys.budgets.paused(),
    queryFn: () => client.budgets.list.page({ query: { state: 'paused', limit: PAUSES_READ } }),
    enabled: can('budgets:admin'),
    select: (page) => pausesOf(page.items),
  });
  return paused.data ?? NONE;
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
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.budgets.all }),
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

/**
 * A plan or capability a budget paused: the badge, a link to its budget, and (budgets:admin) a
 * Resume; `compact` (in a list of chips): the badge alone. Nothing when no budget pauses it.
 */
export function PausedByBudget({ budget, what, compact = false }: { budget: Budget | undefined; what: string; compact?: boolean }) {
  const { can } = useSession();
  if (budget === undefined) return null;
  const badge = (
    <span className="badge health-unhealthy" title={`Budget ${budget.name} paused this ${what}: its steps wait until it resumes`}>
      paused by budget
    </span>
  );
  if (compact) return <> {badge}</>;
  return (
    <span className="paused-by-budget" data-paused-by={budget.id}>
      {badge}{' '}
      <Link to="/settings/budgets" hash={budget.id}>
        {budget.name}
      </Link>
      {can('budgets:admin') && (
        <>
          {' '}
          <ResumeButton budget={budget} label={`Resume ${what}`} />
        </>
      )}
    </span>
  );
}

/** Across the console while a global budget pauses every agent. */
export function GlobalPauseBanner() {
  const { global } = usePauses();
  if (global === null) return null;
  return (
    <div className="notice error" role="status" data-testid="global-pause">
      <p>
        <strong>Every agent is paused by budget</strong>{' '}
        <Link to="/settings/budgets" hash={global.id}>
          {global.name}
        </Link>
        : inboxes hold their messages and plan steps wait until it resumes
        {global.period_end && (
          <>
            {' '}
            (its period ends <time dateTime={global.period_end}>{new Date(global.period_end).toLocaleString()}</time>)
          </>
        )}
        .
      </p>
      <ResumeButton budget={global} label="Resume every agent" />
    </div>
  );
}
