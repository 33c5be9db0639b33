import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import type { Result } from '../../../src/client/browser.js';
import { AUDIT_OUTCOMES, auditQuery, type AuditEntry, type AuditOutcome, type AuditSearch } from './audit-search.js';
import { ErrorNotice } from '../errors.js';
import { ChoiceFilter, filterText, FilterForm, TextFilter, TimeWindowFilter } from '../filter-fields.js';
import { pageWindow } from '../format.js';
import { Pager } from '../pager.js';
import { ResourceLink } from '../resource-link.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import { draftOf, windowOf } from '../time-window.js';
import { queryKeys } from '../query-keys.js';
import './audit.css';

export type { AuditSearch } from './audit-search.js';

const PAGE_SIZE = 50;

/** The audit log for those who may read it (audit:read); the server refuses the others anyway. */
export function AuditView({ search }: { search: AuditSearch }) {
  const { can, whoami } = useSession();
  if (!can('audit:read')) {
    return (
      <section>
        <h1>Audit log</h1>
        <p className="notice">The audit log needs the audit:read permission, which this sign-in ({whoami.role}) lacks.</p>
      </section>
    );
  }
  return <AuditLog search={search} />;
}

/**
 * Every change, refused and failed request, newest first, filtered (in the URL) and paged on
 * the server. Entries are no events, so the list is not live: it loads when opened, and on Refresh.
 */
function AuditLog({ search }: { search: AuditSearch }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const navigate = useNavigate({ from: '/audit' });
  const offset = ((search.page ?? 1) - 1) * PAGE_SIZE;
  const { page: _page, ...filters } = search;
  const entries = useQuery({
    queryKey: queryKeys.audit.list({ ...filters, offset }),
    queryFn: () => client.audit.list.page({ query: { ...auditQuery(search), limit: PAGE_SIZE, offset } }),
    placeholderData: keepPreviousData,
  });
  const verify = useMutation({ mutationFn: () => client.audit.verify() });
  const total = entries.data?.total ?? 0;
  const span = pageWindow(search.page ?? 1, PAGE_SIZE, total);
  const filtered = Object.values(filters).some((value) => value !== undefined);

  return (
    <section>
      <div className="view-heading">
        <h1>Audit log</h1>
        <button type="button" className="secondary" onClick={() => void queryClient.invalidateQueries({ queryKey: queryKeys.audit.all })}>
          Refresh
        </button>
        <button type="button" className="secondary" disabled={verify.isPending} onClick={() => verify.mutate()}>
          {verify.isPending ? 'Verifying…' : 'Verify chain'}
        </button>
      </div>
      {verify.data && <ChainVerdict verification={verify.data} />}
      <ErrorNotice error={verify.error} />
      <AuditFilters key={JSON.stringify(filters)} search={search} onApply={(next) => void navigate({ search: next })} />
      <ErrorNotice error={entries.error} />
      {entries.isPending ? (
        <p className="muted">Loading…</p>
      ) : total === 0 && !entries.isError ? (
        <div className="notice empty">
          {filtered ? (
            <>
              <p>No audit entry matches these filters.</p>
              <Link to="/audit">Show every entry</Link>
            </>
          ) : (
            <p>
              <strong>No audit entries yet.</strong> Every change made through the API, and every refused request, is recorded here.
            </p>
          )}
        </div>
      ) : (
        <>
          <Table columns={['Time', 'Actor', 'Action', 'Resource', 'Outcome']}>
            {entries.data?.items.map((entry) => (
              <AuditRow key={entry.id} entry={entry} />
            ))}
          </Table>
          <Pager
            span={span}
            total={total}
            estimated={entries.data?.totalEstimated}
            noun="entries"
            onPage={(page) => void navigate({ search: { ...search, page } })}
          />
        </>
      )}
    </section>
  );
}

function AuditRow({ entry }: { entry: AuditEntry }) {
  return (
    <tr data-entry={entry.id} data-action={entry.action}>
      <th scope="row">
        <time dateTime={entry.at} title={entry.at}>
          {new Date(entry.at).toLocaleString()}
        </time>
      </th>
      <td className="audit-actor" title={entry.actor.key_id ? `through key ${entry.actor.key_id}` : undefined}>
        <code>{entry.actor.id ?? 'anonymous'}</code> <span className="muted">{entry.actor.kind}</span>
      </td>
      <td>
        <code>{entry.action}</code>
      </td>
      <td className="audit-resource">
        <span className="muted">{entry.resource.type}</span> <ResourceLink resource={entry.resource} />
      </td>
      <td>
        <span className={`badge outcome-${entry.outcome}`}>{entry.outcome}</span>
        {entry.status !== null && <span className="muted"> {entry.status}</span>}
        {entry.count > 1 && <span className="muted"> ×{entry.count}</span>}
      </td>
    </tr>
  );
}

/** What the chain's check found: intact (with how many entries, and where retention trimmed it), or the first entry that breaks it. */
function ChainVerdict({ verification }: { verification: Result<'audit.verify'> }) {
  const { ok, checked, first_broken: broken, anchor } = verification;
  const from = anchor ? `, from where retention trimmed it (entry ${anchor.seq}, ${new Date(anchor.trimmed_at).toLocaleString()})` : '';
  if (ok) {
    return (
      <p className="notice chain-ok" role="status" data-testid="chain-verdict">
        The chain holds: {checked} {checked === 1 ? 'entry' : 'entries'} checked{from}.
      </p>
    );
  }
  return (
    <div className="notice error" role="status" data-testid="chain-verdict">
      <p>
        <strong>
          The chain breaks at entry <code>{broken}</code>
        </strong>
        : its fields no longer hash to its hash, or it does not follow the entry before it (edited, deleted or inserted outside
        Switchboard).
      </p>
      <p className="muted">
        {checked} {checked === 1 ? 'entry holds' : 'entries hold'} before it{from}.
      </p>
    </div>
  );
}

/** The audit log's filters, applied into the URL. */
function AuditFilters({ search, onApply }: { search: AuditSearch; onApply(next: AuditSearch): void }) {
  const [actor, setActor] = useState(search.actor ?? '');
  const [action, setAction] = useState(search.action ?? '');
  const [resource, setResource] = useState(search.resource ?? '');
  const [outcome, setOutcome] = useState<AuditOutcome | ''>(search.outcome ?? '');
  const [at, setAt] = useState(draftOf(search));
  const apply = () =>
    onApply({
      actor: filterText(actor),
      action: filterText(action),
      resource: filterText(resource),
      outcome: outcome || undefined,
      ...windowOf(at),
    });
  return (
    <FilterForm label="Filter audit entries" onApply={apply}>
      <TextFilter label="Actor" value={actor} onChange={setActor} placeholder="user:ada, an agent id, admin" />
      <TextFilter label="Action" value={action} onChange={setAction} placeholder="e.g. key.create" />
      <TextFilter label="Resource" value={resource} onChange={setResource} placeholder="its id, e.g. run_…" />
      <ChoiceFilter label="Outcome" value={outcome} onChange={setOutcome} choices={AUDIT_OUTCOMES} any="Any outcome" />
      <TimeWindowFilter label="Time" value={at} onChange={setAt} />
    </FilterForm>
  );
}
