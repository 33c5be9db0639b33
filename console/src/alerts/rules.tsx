import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import type { Body, Item, Result } from '../../../src/client/browser.js';
import { ConfirmButton } from '../confirm-button.js';
import { ErrorNotice } from '../errors.js';
import { ListBody } from '../list-body.js';
import { relativeTime } from '../format.js';
import { queryKeys } from '../query-keys.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import { useChannels } from './channels.js';
import { CONDITIONS, conditionOf, conditionText, type ConditionType } from './conditions.js';
import './alerts.css';

type Rule = Item<'alerts.listRules'>;
type Severity = Rule['severity'];

const RULES_SHOWN = 100;
const SEVERITIES: readonly Severity[] = ['info', 'warning', 'critical'];

/** Settings → Alert rules (admin): list, create with a previewed condition, enable/disable, silence, delete. */
export function RulesView() {
  const { client } = useSession();
  const rules = useQuery({
    queryKey: queryKeys.alertRules.list({ limit: RULES_SHOWN }),
    queryFn: () => client.alerts.listRules.page({ query: { limit: RULES_SHOWN } }),
  });
  const items = rules.data?.items ?? [];
  return (
    <section>
      <h1>Alert rules</h1>
      <CreateRuleForm />
      <ListBody query={rules} total={items.length} empty="No alert rules yet. Create one above: its alerts fire while its condition holds.">
        <Table columns={['Name', 'Condition', 'Severity', 'State', { label: 'Actions', visuallyHidden: true }]}>
          {items.map((rule) => (
            <RuleRow key={rule.id} rule={rule} now={rules.dataUpdatedAt} />
          ))}
        </Table>
        {(rules.data?.total ?? 0) > RULES_SHOWN && <p className="muted">The first {RULES_SHOWN} rules are shown.</p>}
      </ListBody>
    </section>
  );
}

function RuleRow({ rule, now }: { rule: Rule; now: number }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const id = useId();
  const [until, setUntil] = useState('');
  const refresh = () => queryClient.invalidateQueries({ queryKey: queryKeys.alertRules.all });
  const update = useMutation({
    mutationFn: (body: Body<'alerts.updateRule'>) => client.alerts.updateRule({ path: { id: rule.id }, body }),
    onSuccess: refresh,
  });
  const remove = useMutation({ mutationFn: () => client.alerts.deleteRule({ path: { id: rule.id } }), onSuccess: refresh });
  const silenced = rule.silenced_until !== null && Date.parse(rule.silenced_until) > now;
  return (
    <tr data-rule={rule.id}>
      <th scope="row">
        {rule.name}
        <div className="muted">{rule.id}</div>
      </th>
      <td className="wrap-anywhere">{conditionText(rule.condition)}</td>
      <td>
        <span className={`badge severity-${rule.severity}`}>{rule.severity}</span>
      </td>
      <td>
        <span className={`badge ${rule.enabled ? 'health-healthy' : 'health-unhealthy'}`}>{rule.enabled ? 'enabled' : 'disabled'}</span>
        {silenced && (
          <div className="muted">
            silenced until <time dateTime={rule.silenced_until!}>{new Date(rule.silenced_until!).toLocaleString()}</time>
          </div>
        )}
      </td>
      <td className="actions">
        <button type="button" className="secondary" disabled={update.isPending} onClick={() => update.mutate({ enabled: !rule.enabled })}>
          {rule.enabled ? 'Disable' : 'Enable'}
        </button>
        {silenced ? (
          <button type="button" className="secondary" disabled={update.isPending} onClick={() => update.mutate({ silenced_until: null })}>
            Unsilence
          </button>
        ) : (
          <form
            className="silence"
            onSubmit={(event) => {
              event.preventDefault();
              update.mutate({ silenced_until: new Date(until).toISOString() });
            }}
          >
            <label htmlFor={`${id}-until`} className="visually-hidden">
              Silence {rule.name} until
            </label>
            <input id={`${id}-until`} type="datetime-local" value={until} onChange={(event) => setUntil(event.target.value)} required />
            <button type="submit" className="secondary" disabled={update.isPending}>
              Silence
            </button>
          </form>
        )}
        <ErrorNotice error={update.error} />
        <ConfirmButton
          label="Delete"
          confirm="Confirm delete"
          pending={remove.isPending}
          error={remove.error}
          onConfirm={() => remove.mutate()}
        />
        <div className="muted">created {relativeTime(rule.created_at, now)}</div>
      </td>
    </tr>
  );
}

function CreateRuleForm() {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const id = useId();
  const channels = useChannels();
  const [name, setName] = useState('');
  const [severity, setSeverity] = useState<Severity>('warning');
  const [type, setType] = useState<ConditionType>('event_count');
  const [values, setValues] = useState<Record<string, string>>({});
  const [chosen, setChosen] = useState<readonly string[]>([]);
  const [repeat, setRepeat] = useState('0');
  const create = useMutation({
    mutationFn: (body: Body<'alerts.createRule'>) => client.alerts.createRule({ body }),
    onSuccess: () => {
      setName('');
      setValues({});
      preview.reset();
      return queryClient.invalidateQueries({ queryKey: queryKeys.alertRules.all });
    },
  });
  const preview = useMutation({
    mutationFn: () => client.alerts.previewRule({ body: { condition: conditionOf(type, values) } }),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate({
      name: name.trim(),
      severity,
      channels: [...chosen],
      repeat_interval_s: Number(repeat),
      condition: conditionOf(type, values),
    });
  };
  const channelItems = channels.data?.items ?? [];
  return (
    <form className="card alerts-form" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Create a rule</h2>
      <div className="fields">
        <label className="wide">
          Name
          <input value={name} onChange={(event) => setName(event.target.value)} placeholder="Runs failing" required />
        </label>
        <label>
          Severity
          <select value={severity} onChange={(event) => setSeverity(event.target.value as Severity)}>
            {SEVERITIES.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Repeat every (s, 0: never)
          <input type="number" min={0} value={repeat} onChange={(event) => setRepeat(event.target.value)} required />
        </label>
        <fieldset>
          <legend>Condition</legend>
          <div className="fields">
            <label>
              Condition type
              <select
                value={type}
                onChange={(event) => {
                  setType(event.target.value as ConditionType);
                  preview.reset();
                }}
              >
                {Object.entries(CONDITIONS).map(([key, { label }]) => (
                  <option key={key} value={key}>
                    {label}
                  </option>
                ))}
              </select>
            </label>
            {CONDITIONS[type].fields.map((field) => (
              <label key={`${type}-${field.key}`}>
                {field.label}
                <input
                  type={field.number ? 'number' : 'text'}
                  min={field.number ? 0 : undefined}
                  value={values[field.key] ?? ''}
                  onChange={(event) => setValues({ ...values, [field.key]: event.target.value })}
                  required={!field.optional}
                />
              </label>
            ))}
          </div>
          <button type="button" className="secondary" disabled={preview.isPending} onClick={() => preview.mutate()}>
            Preview
          </button>
          <ErrorNotice error={preview.error} />
          {preview.data && <PreviewAnswer answer={preview.data} />}
        </fieldset>
        <fieldset>
          <legend>Channels</legend>
          <ErrorNotice error={channels.error} />
          {channels.isSuccess && channelItems.length === 0 && (
            <p className="muted">No channels yet: create one under Notification channels.</p>
          )}
          {channelItems.map((channel) => (
            <label key={channel.id} className="toggle">
              <input
                type="checkbox"
                checked={chosen.includes(channel.id)}
                onChange={(event) => setChosen(event.target.checked ? [...chosen, channel.id] : chosen.filter((c) => c !== channel.id))}
              />
              {channel.name} ({channel.type})
            </label>
          ))}
        </fieldset>
      </div>
      <button type="submit" disabled={create.isPending || chosen.length === 0}>
        Create rule
      </button>
      <ErrorNotice error={create.error} />
    </form>
  );
}

/** What the condition measures now and, for event_count, over the last hour. */
function PreviewAnswer({ answer }: { answer: Result<'alerts.previewRule'> }) {
  return (
    <div className="preview" role="status" data-testid="rule-preview">
      <p>
        <strong>{answer.holds ? 'Holds now: a rule on it would fire.' : 'Does not hold now.'}</strong> {answer.summary}
      </p>
      {answer.history === null ? (
        <p className="muted">This condition keeps no history: the preview is its measure now.</p>
      ) : (
        <>
          <p className="muted">Over the last hour, a window ending every 5 minutes (oldest first); bold: it would have fired.</p>
          <ol aria-label="The last hour">
            {answer.history.map((window) => (
              <li key={window.at} className={window.holds ? 'holds' : undefined} title={window.at}>
                {new Date(window.at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })}: {window.value}
              </li>
            ))}
          </ol>
        </>
      )}
    </div>
  );
}
