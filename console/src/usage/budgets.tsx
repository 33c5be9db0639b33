import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import type { Body, Item } from '../../../src/client/browser.js';
import { ConfirmButton } from '../confirm-button.js';
import { ErrorNotice } from '../errors.js';
import { ListBody } from '../list-body.js';
import { useLiveRefresh } from '../live.js';
import { queryKeys } from '../query-keys.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import { BUDGET_EVENTS, ResumeButton } from './pauses.js';
import { formatCost, formatTokens } from './usage.js';
import './usage.css';

type Budget = Item<'budgets.list'>;
type Scope = Budget['scope']['kind'];
type Period = Body<'budgets.create'>['period'];
type Action = Body<'budgets.create'>['action'];

/** Budgets listed at most: a team keeps a few. */
const BUDGETS_SHOWN = 100;
const PERIODS: readonly Period[] = ['day', 'week', 'month', 'total'];
const SCOPES: readonly Scope[] = ['agent', 'capability', 'plan', 'global'];
/** The budgets (admin), for this page. */
function useBudgets() {
  const { client, can } = useSession();
  return useQuery({
    queryKey: queryKeys.budgets.list({ limit: BUDGETS_SHOWN }),
    queryFn: () => client.budgets.list.page({ query: { limit: BUDGETS_SHOWN } }),
    enabled: can('budgets:admin'),
  });
}

/** Settings → Budgets (admin): each budget's spend in its period against its limits; create, edit, delete, resume. */
export function BudgetsView() {
  useLiveRefresh({ queryKey: queryKeys.budgets.all, events: BUDGET_EVENTS });
  const budgets = useBudgets();
  const [editing, setEditing] = useState<Budget | null>(null);
  const items = budgets.data?.items ?? [];
  return (
    <section>
      <h1>Budgets</h1>
      <BudgetForm key={editing?.id ?? 'new'} budget={editing} onDone={() => setEditing(null)} />
      <ListBody
        query={budgets}
        total={items.length}
        empty="No budgets yet. Create one above: it warns or pauses what it covers once it spends its limit."
      >
        <Table columns={['Budget', 'Scope', 'Period', 'Spent', 'State', { label: 'Actions', visuallyHidden: true }]}>
          {items.map((budget) => (
            <BudgetRow key={budget.id} budget={budget} onEdit={() => setEditing(budget)} />
          ))}
        </Table>
      </ListBody>
    </section>
  );
}

/** Spent against one limit, as a line and a bar (full, in the danger colour, once over). */
function Consumption({ spent, limit, format, label }: { spent: number; limit: number; format(value: number): string; label: string }) {
  const fraction = spent / limit;
  return (
    <div>
      {format(spent)} of {format(limit)} {label}
      <span
        className={`consumption${fraction >= 1 ? ' over' : ''}`}
        role="meter"
        aria-valuemin={0}
        aria-valuemax={limit}
        aria-valuenow={spent}
        aria-label={`${label} spent`}
      >
        <span style={{ width: `${Math.min(100, fraction * 100)}%` }} />
      </span>
    </div>
  );
}

function BudgetRow({ budget, onEdit }: { budget: Budget; onEdit(): void }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const refresh = () => queryClient.invalidateQueries({ queryKey: queryKeys.budgets.all });
  const remove = useMutation({ mutationFn: () => client.budgets.delete({ path: { id: budget.id } }), onSuccess: refresh });
  const { limits, spent } = budget;
  return (
    <tr data-budget={budget.id} id={budget.id}>
      <th scope="row">
        {budget.name}
        <div className="muted">{budget.id}</div>
      </th>
      <td>
        {budget.scope.kind}
        {budget.scope.value && (
          <>
            {' '}
            <code>{budget.scope.value}</code>
          </>
        )}
      </td>
      <td>
        {budget.period}
        {budget.period !== 'total' && <div className="muted">{budget.time_zone}</div>}
      </td>
      <td>
        {limits.cost_usd !== null && <Consumption spent={spent.cost_usd} limit={limits.cost_usd} format={formatCost} label="cost" />}
        {limits.tokens !== null && <Consumption spent={spent.tokens} limit={limits.tokens} format={formatTokens} label="tokens" />}
      </td>
      <td>
        <span
          className={`badge ${budget.state === 'ok' ? 'health-healthy' : budget.state === 'warning' ? 'health-degraded' : 'health-unhealthy'}`}
        >
          {budget.state}
        </span>
        <div className="muted">on crossing: {budget.action}</div>
      </td>
      <td className="actions">
        {budget.state === 'paused' && <ResumeButton budget={budget} />}
        <button type="button" className="secondary" onClick={onEdit}>
          Edit
        </button>
        <ConfirmButton
          label="Delete"
          confirm="Confirm delete"
          pending={remove.isPending}
          error={remove.error}
          onConfirm={() => remove.mutate()}
        />
      </td>
    </tr>
  );
}

/** Limits as the form holds them: empty means none. */
function limitsOf(cost: string, tokens: string): Body<'budgets.create'>['limits'] {
  return { ...(cost.trim() && { cost_usd: Number(cost) }), ...(tokens.trim() && { tokens: Number(tokens) }) };
}

/** Creates a budget, or edits one (its name, limits, warning and action: its scope and period stay). */
function BudgetForm({ budget, onDone }: { budget: Budget | null; onDone(): void }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const [name, setName] = useState(budget?.name ?? '');
  const [scope, setScope] = useState<Scope>(budget?.scope.kind ?? 'agent');
  const [target, setTarget] = useState(budget?.scope.value ?? '');
  const [period, setPeriod] = useState<Period>(
    budget?.period === undefined ? 'month' : (PERIODS.find((p) => p === budget.period) ?? 'month'),
  );
  const [cost, setCost] = useState(budget?.limits.cost_usd?.toString() ?? '');
  const [tokens, setTokens] = useState(budget?.limits.tokens?.toString() ?? '');
  const [warnAt, setWarnAt] = useState(budget?.warn_at?.toString() ?? '');
  const [action, setAction] = useState<Action>(budget?.action === 'warn' ? 'warn' : 'pause');
  const save = useMutation({
    mutationFn: () => {
      const limits = limitsOf(cost, tokens);
      const warn_at = warnAt.trim() ? Number(warnAt) : undefined;
      if (budget) {
        return client.budgets.update({ path: { id: budget.id }, body: { name, limits, action, warn_at: warn_at ?? null } });
      }
      const scoped =
        scope === 'global' ? {} : { [scope === 'agent' ? 'agent_id' : scope === 'plan' ? 'plan_id' : 'capability']: target.trim() };
      return client.budgets.create({
        body: { ...(name.trim() && { name: name.trim() }), ...scoped, period, limits, action, ...(warn_at !== undefined && { warn_at }) },
      });
    },
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.budgets.all });
      onDone();
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate();
  };
  return (
    <form className="card alerts-form" onSubmit={submit} aria-label={budget ? `Edit budget ${budget.name}` : 'New budget'}>
      <h2>{budget ? `Edit ${budget.name}` : 'New budget'}</h2>
      <div className="fields">
        <label>
          Name
          <input value={name} onChange={(event) => setName(event.target.value)} maxLength={200} />
        </label>
        <label>
          Scope
          <select
            value={scope}
            disabled={budget !== null}
            onChange={(event) => setScope(SCOPES.find((s) => s === event.target.value) ?? 'agent')}
          >
            {SCOPES.map((kind) => (
              <option key={kind}>{kind}</option>
            ))}
          </select>
        </label>
        {scope !== 'global' && (
          <label>
            {scope === 'agent' ? 'Agent id' : scope === 'plan' ? 'Plan id' : 'Capability'}
            <input value={target} required disabled={budget !== null} onChange={(event) => setTarget(event.target.value)} />
          </label>
        )}
        <label>
          Period
          <select
            value={period}
            disabled={budget !== null}
            onChange={(event) => setPeriod(PERIODS.find((p) => p === event.target.value) ?? 'month')}
          >
            {PERIODS.map((name) => (
              <option key={name}>{name}</option>
            ))}
          </select>
        </label>
        <label>
          Cost limit (USD)
          <input type="number" min={0} step="any" value={cost} onChange={(event) => setCost(event.target.value)} />
        </label>
        <label>
          Token limit
          <input type="number" min={1} step={1} value={tokens} onChange={(event) => setTokens(event.target.value)} />
        </label>
        <label>
          Warn at (fraction)
          <input
            type="number"
            min={0}
            max={1}
            step="any"
            value={warnAt}
            onChange={(event) => setWarnAt(event.target.value)}
            placeholder="0.8"
          />
        </label>
        <label>
          On crossing
          <select value={action} onChange={(event) => setAction(event.target.value === 'warn' ? 'warn' : 'pause')}>
            <option value="pause">pause</option>
            <option value="warn">warn</option>
          </select>
        </label>
      </div>
      <div className="buttons">
        <button type="submit" disabled={save.isPending}>
          {budget ? 'Save budget' : 'Create budget'}
        </button>
        {budget && (
          <button type="button" className="secondary" onClick={onDone}>
            Cancel
          </button>
        )}
      </div>
      <ErrorNotice error={save.error} />
    </form>
  );
}
