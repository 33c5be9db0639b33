import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { ErrorNotice } from '../errors.js';
import { queryKeys } from '../query-keys.js';
import { useSession } from '../session.js';
import { replayFilter, type ReplayFilter, type RunsSearch } from './run-search.js';

type ReplayFrom = 'start' | 'failed_step';

interface Preview {
  filter: ReplayFilter & { error?: string };
  from: ReplayFrom;
  count: number;
  matched: number;
  truncated: boolean;
}

const runsNoun = (count: number) => `${count} ${count === 1 ? 'run' : 'runs'}`;

/**
 * The runs list's bulk action: replays the finished runs its filters match. A dry run counts them
 * first, with the filter fixed then (a relative window does not move on); the replay confirmed
 * takes exactly that filter.
 */
export function ReplayRuns({ search, onClose }: { search: RunsSearch; onClose(): void }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const id = useId();
  const [from, setFrom] = useState<ReplayFrom>('failed_step');
  const [error, setError] = useState('');
  const [preview, setPreview] = useState<Preview | null>(null);
  const available = replayFilter(search);
  const count = useMutation({
    mutationFn: async ({ filter, from }: Omit<Preview, 'count' | 'matched' | 'truncated'>) => {
      const answer = await client.coordination.replayRuns({ body: { filter, replay_from: from, dry_run: true } });
      return { filter, from, count: answer.count, matched: answer.matched, truncated: answer.truncated };
    },
    onSuccess: setPreview,
  });
  const replay = useMutation({
    mutationFn: ({ filter, from }: Preview) => client.coordination.replayRuns({ body: { filter, replay_from: from } }),
    onSuccess: () => {
      setPreview(null);
      void queryClient.invalidateQueries({ queryKey: queryKeys.runs.all });
    },
  });
  // A changed option needs a new count before a replay.
  const changed = () => {
    setPreview(null);
    replay.reset();
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!('filter' in available)) return;
    const text = error.trim();
    count.mutate({ filter: { ...available.filter, ...(text ? { error: text } : {}) }, from });
  };

  return (
    <form className="card replay-panel" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Replay runs</h2>
      <p className="muted">
        Runs again, each as a new run, the finished runs the list&apos;s filters match (oldest first, at most 10,000 a replay).
      </p>
      {'unavailable' in available ? (
        <>
          <p className="notice">{available.unavailable}</p>
          <div className="buttons">
            <button type="button" className="secondary" onClick={onClose}>
              Close
            </button>
          </div>
        </>
      ) : (
        <>
          <ReplayScope filter={available.filter} />
          <fieldset>
            <legend>Replay from</legend>
            <label className="inline">
              <input
                type="radio"
                name={`${id}-from`}
                checked={from === 'failed_step'}
                onChange={() => {
                  setFrom('failed_step');
                  changed();
                }}
              />
              The step each failed at (runs that failed at none are passed over)
            </label>
            <label className="inline">
              <input
                type="radio"
                name={`${id}-from`}
                checked={from === 'start'}
                onChange={() => {
                  setFrom('start');
                  changed();
                }}
              />
              The start
            </label>
          </fieldset>
          <label>
            Error contains (optional)
            <input
              value={error}
              maxLength={500}
              onChange={(event) => {
                setError(event.target.value);
                changed();
              }}
            />
          </label>
          <div className="buttons">
            <button type="submit" className="secondary" disabled={count.isPending}>
              Count runs to replay
            </button>
            <button type="button" className="secondary" onClick={onClose}>
              Close
            </button>
          </div>
        </>
      )}
      <ErrorNotice error={count.error} />
      {preview && (
        <div className="notice" role="status">
          <p>
            {preview.count === 0 ? 'No run to replay.' : `${runsNoun(preview.count)} would be replayed.`}
            {preview.truncated &&
              ` ${preview.matched} runs matched, more than one replay takes: replay again once these have run for the rest.`}
          </p>
          {preview.count > 0 && (
            <button type="button" disabled={replay.isPending} onClick={() => replay.mutate(preview)}>
              Replay {runsNoun(preview.count)}
            </button>
          )}
        </div>
      )}
      <ErrorNotice error={replay.error} />
      {replay.data && (
        <p className="notice" role="status">
          Started {runsNoun(replay.data.count)}.{replay.data.truncated && ' More runs matched than one replay takes.'}
        </p>
      )}
    </form>
  );
}

/** The runs a replay would take, in words. */
function ReplayScope({ filter }: { filter: ReplayFilter }) {
  const parts = [
    filter.plan_id ? `of plan ${filter.plan_id}` : 'of every plan',
    filter.status ? `that ${filter.status === 'cancelled' ? 'were cancelled' : filter.status}` : 'completed, failed or cancelled',
    filter.after ? `started after ${new Date(filter.after).toLocaleString()}` : null,
    filter.before ? `started before ${new Date(filter.before).toLocaleString()}` : null,
  ];
  return <p>Runs {parts.filter((part) => part !== null).join(', ')}.</p>;
}
