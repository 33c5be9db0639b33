import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import type { Query, Result } from '../../../src/client/browser.js';
import { ErrorNotice } from '../errors.js';
import { ListBody } from '../list-body.js';
import { queryKeys } from '../query-keys.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import { BarChart } from './bar-chart.js';
import './usage.css';

type GroupBy = Query<'usage.totals'>['group_by'];
type Totals = Result<'usage.totals'>['rows'];

/** What the totals beside the chart can be grouped by. */
export const USAGE_GROUPS = ['agent', 'plan', 'model'] as const satisfies readonly GroupBy[];
export type UsageGroup = (typeof USAGE_GROUPS)[number];

export interface UsageSearch {
  group?: UsageGroup;
  /** Days shown, counting today. */
  days?: number;
}

export const USAGE_DAYS = [7, 30, 90] as const;
/** Usage changes with every acknowledgement: refetched on this interval rather than on each event. */
const REFRESH_MS = 30_000;
const DAY_MS = 86_400_000;

export const formatCost = (usd: number) => `$${usd.toFixed(usd < 1 ? 4 : 2)}`;
export const formatTokens = (tokens: number) => tokens.toLocaleString('en');

/** Usage: cost per day (a chart of the window's days) and the window's totals by agent, plan or model. */
export function UsageView({ search }: { search: UsageSearch }) {
  const { client } = useSession();
  const navigate = useNavigate({ from: '/usage' });
  const group = search.group ?? 'agent';
  const days = search.days ?? USAGE_DAYS[0];
  // Whole UTC days (the day rows are keyed by the UTC date), as of when the page opened.
  const [today] = useState(() => Math.floor(Date.now() / DAY_MS) * DAY_MS);
  const after = new Date(today - (days - 1) * DAY_MS).toISOString();
  const totals = (group_by: GroupBy) => ({
    queryKey: queryKeys.usage.totals({ group_by, after }),
    queryFn: () => client.usage.totals({ query: { group_by, after } }),
    placeholderData: keepPreviousData,
    refetchInterval: REFRESH_MS,
  });
  const byDay = useQuery(totals('day'));
  const byGroup = useQuery(totals(group));
  const dayCost = new Map((byDay.data?.rows ?? []).map((row) => [row.key?.slice(0, 10), row.cost_usd]));
  const bars = Array.from({ length: days }, (_, index) => {
    const day = new Date(today - (days - 1 - index) * DAY_MS).toISOString().slice(0, 10);
    return { label: day.slice(5), value: dayCost.get(day) ?? 0 };
  });
  const rows = byGroup.data?.rows ?? [];
  return (
    <section>
      <h1>Usage</h1>
      <div className="filters">
        <label>
          Group by
          <select value={group} onChange={(event) => void navigate({ search: { ...search, group: asGroup(event.target.value) } })}>
            {USAGE_GROUPS.map((name) => (
              <option key={name}>{name}</option>
            ))}
          </select>
        </label>
        <label>
          Window
          <select value={days} onChange={(event) => void navigate({ search: { ...search, days: Number(event.target.value) } })}>
            {USAGE_DAYS.map((count) => (
              <option key={count} value={count}>
                last {count} days
              </option>
            ))}
          </select>
        </label>
      </div>
      <div className="usage-panels">
        <div>
          <h2>Cost per day (UTC)</h2>
          <ErrorNotice error={byDay.error} />
          <BarChart bars={bars} label={`Cost per day over the last ${days} days`} format={formatCost} />
        </div>
        <div>
          <h2>By {group}</h2>
          <ListBody query={byGroup} total={rows.length} empty="No usage recorded in this window.">
            <UsageTable rows={rows} group={group} />
          </ListBody>
        </div>
      </div>
    </section>
  );
}

function asGroup(value: string): UsageGroup {
  return USAGE_GROUPS.find((name) => name === value) ?? 'agent';
}

function UsageTable({ rows, group }: { rows: Totals; group: UsageGroup }) {
  return (
    <Table columns={[group[0]!.toUpperCase() + group.slice(1), 'Calls', 'Input tokens', 'Output tokens', 'Cost']}>
      {rows.map((row) => (
        <tr key={row.key ?? ''} data-usage={row.key ?? ''}>
          <th scope="row">{row.key === null ? <span className="muted">none</span> : <code>{row.key}</code>}</th>
          <td>{row.count}</td>
          <td>{formatTokens(row.input_tokens)}</td>
          <td>{formatTokens(row.output_tokens)}</td>
          <td>{formatCost(row.cost_usd)}</td>
        </tr>
      ))}
    </Table>
  );
}
