import { useMutation } from '@tanstack/react-query';
import { useId, useMemo, useState, type FormEvent } from 'react';
import type { Body, Result } from '../../../src/client/browser.js';
import { formatInZone, previewCron } from './cron-preview.js';
import { ErrorNotice } from '../errors.js';
import { useSession } from '../session.js';

type Routine = Result<'routines.get'>;
type Fields = Body<'routines.create'>;

const PREVIEW_COUNT = 5;
const BROWSER_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

/**
 * Creating a routine (no `routine`) or editing one: the cron field previews its next fires in the
 * routine's time zone as it is typed; on save the server's validation errors are shown.
 */
export function RoutineForm({ routine, onSaved, onCancel }: { routine?: Routine; onSaved(routine: Routine): void; onCancel?(): void }) {
  const { client } = useSession();
  const id = useId();
  const [name, setName] = useState(routine?.name ?? '');
  const [description, setDescription] = useState(routine?.description ?? '');
  const [trigger, setTrigger] = useState<Fields['trigger_type']>(routine?.trigger_type ?? 'cron');
  const [cron, setCron] = useState(routine?.cron_expression ?? '');
  const [timezone, setTimezone] = useState(routine?.timezone ?? BROWSER_ZONE);
  const [target, setTarget] = useState(routine?.target_agent ?? '');
  const [payload, setPayload] = useState(JSON.stringify(routine?.payload ?? {}, null, 2));
  const [overlap, setOverlap] = useState<NonNullable<Fields['overlap']>>(routine?.overlap ?? 'allow');
  const [catchUp, setCatchUp] = useState<NonNullable<Fields['catch_up']>>(routine?.catch_up ?? 'latest');
  const [payloadProblem, setPayloadProblem] = useState<string | null>(null);

  const save = useMutation({
    mutationFn: (body: Fields) => (routine ? client.routines.update({ path: { id: routine.id }, body }) : client.routines.create({ body })),
    onSuccess: onSaved,
  });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const parsed = parsePayload(payload);
    setPayloadProblem(parsed === null ? 'The payload must be a JSON object, such as {"report": "daily"}.' : null);
    if (parsed === null) return;
    save.mutate({
      name: name.trim(),
      ...(description.trim() ? { description: description.trim() } : {}),
      trigger_type: trigger,
      // A webhook routine has no schedule: the server refuses one.
      ...(trigger === 'cron' ? { cron_expression: cron.trim(), timezone: timezone.trim() || 'UTC' } : {}),
      target_agent: target.trim(),
      payload: parsed,
      overlap,
      catch_up: catchUp,
    });
  };

  return (
    <form className="card routine-form" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{routine ? `Edit ${routine.name}` : 'New routine'}</h2>
      <div className="fields">
        <label>
          Name
          <input value={name} onChange={(event) => setName(event.target.value)} placeholder="nightly report" />
        </label>
        <label>
          Target agent
          <input value={target} onChange={(event) => setTarget(event.target.value)} placeholder="reporter" />
        </label>
        <label>
          Trigger
          <select value={trigger} onChange={(event) => setTrigger(event.target.value as Fields['trigger_type'])}>
            <option value="cron">cron schedule</option>
            <option value="webhook">webhook</option>
          </select>
        </label>
      </div>
      {trigger === 'cron' && (
        <div className="fields">
          <label>
            Cron expression
            <input value={cron} onChange={(event) => setCron(event.target.value)} placeholder="0 9 * * 1-5" className="mono" />
          </label>
          <label>
            Time zone
            <input value={timezone} onChange={(event) => setTimezone(event.target.value)} placeholder="Europe/Paris" />
          </label>
          <label>
            Missed fires
            <select value={catchUp} onChange={(event) => setCatchUp(event.target.value as typeof catchUp)}>
              <option value="latest">fire the latest once</option>
              <option value="all">fire each (at most 100)</option>
              <option value="none">skip them</option>
            </select>
          </label>
        </div>
      )}
      {trigger === 'cron' && <CronPreview expression={cron} timezone={timezone} />}
      <div className="fields">
        <label>
          While the previous execution runs
          <select value={overlap} onChange={(event) => setOverlap(event.target.value as typeof overlap)}>
            <option value="allow">fire anyway</option>
            <option value="skip">skip the fire</option>
          </select>
        </label>
      </div>
      <label className="wide">
        Description
        <input value={description} onChange={(event) => setDescription(event.target.value)} />
      </label>
      <label className="wide">
        Payload (JSON, sent to the agent with every execution)
        <textarea value={payload} onChange={(event) => setPayload(event.target.value)} rows={4} className="mono" />
      </label>
      {payloadProblem && (
        <p role="alert" className="notice error">
          {payloadProblem}
        </p>
      )}
      <div className="buttons">
        <button type="submit" disabled={save.isPending}>
          {routine ? 'Save routine' : 'Create routine'}
        </button>
        {onCancel && (
          <button type="button" className="secondary" onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
      <ErrorNotice error={save.error} />
    </form>
  );
}

function parsePayload(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text.trim() || '{}');
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The next fires of the expression being typed, as a clock in the routine's zone shows them. */
export function CronPreview({ expression, timezone }: { expression: string; timezone: string }) {
  const preview = useMemo(() => previewCron(expression, timezone, PREVIEW_COUNT, new Date()), [expression, timezone]);
  const zone = timezone.trim() || 'UTC';
  return (
    <div className="cron-preview" aria-live="polite" data-testid="cron-preview">
      {'problem' in preview ? (
        <p className="muted">{preview.problem}</p>
      ) : (
        <>
          <p className="muted">
            Next {preview.fires.length} fires ({zone}):
          </p>
          <ol>
            {preview.fires.map((fire) => (
              <li key={fire.getTime()}>
                <time dateTime={fire.toISOString()}>{formatInZone(fire, zone)}</time>
              </li>
            ))}
          </ol>
        </>
      )}
    </div>
  );
}
