import { keepPreviousData, useQuery } from '@tanstack/react-query';
import type { Item } from '../../../src/client/browser.js';
import { ErrorNotice } from '../errors.js';
import { JsonView } from '../json-view.js';
import { queryKeys } from '../query-keys.js';
import { useSession } from '../session.js';
import { formatCost, formatTokens } from '../usage/usage.js';
import type { Run } from './runs.js';

type RunStep = Run['steps'][number];
type LogLine = Item<'coordination.listRunLogs'>;
/** The API's largest page: a step's log holds at most 1,000 lines. */
const LOG_LINES = 500;

/** What a run or a step cost, in a line: calls, tokens in and out, dollars. */
export function CostLine({ usage }: { usage: RunStep['usage'] }) {
  if (!usage || usage.count === 0) return <span className="muted">none recorded</span>;
  return (
    <span data-testid="cost">
      {formatCost(usage.cost_usd)} · {formatTokens(usage.input_tokens)} in / {formatTokens(usage.output_tokens)} out · {usage.count}{' '}
      {usage.count === 1 ? 'call' : 'calls'}
    </span>
  );
}

/** A step's latest checkpoint: what its agent saved, when, in which attempt. */
export function StepCheckpoint({ step }: { step: RunStep }) {
  const { checkpoint } = step;
  if (!checkpoint) return null;
  return (
    <details className="step-checkpoint" data-testid={`checkpoint-${step.id}`}>
      <summary>
        Latest checkpoint of {step.id}, saved{' '}
        <time dateTime={checkpoint.saved_at}>{new Date(checkpoint.saved_at).toLocaleTimeString()}</time> in attempt {checkpoint.attempt}
      </summary>
      <JsonView value={checkpoint.state} label={`Checkpoint of ${step.id}`} />
    </details>
  );
}

/**
 * The lines a step's agent logged, oldest first. Each line is a run.step.log event, which the
 * run page's live refresh (run.>) turns into a refetch: the log follows the step as it works.
 */
export function StepLogs({ runId, step }: { runId: string; step: RunStep }) {
  const { client } = useSession();
  const logs = useQuery({
    queryKey: queryKeys.runs.stepLogs(runId, step.id),
    queryFn: () => client.coordination.listRunLogs.page({ path: { run_id: runId }, query: { step_id: step.id, limit: LOG_LINES } }),
    placeholderData: keepPreviousData,
  });
  const lines = logs.data?.items ?? [];
  if (lines.length === 0 && !logs.error) return null;
  const more = (logs.data?.total ?? 0) - lines.length;
  return (
    <div className="step-logs">
      <h3>Log</h3>
      <ErrorNotice error={logs.error} />
      <ol className="log-lines" aria-label={`Log of ${step.id}`}>
        {lines.map((line) => (
          <LogRow key={line.seq} line={line} />
        ))}
      </ol>
      {more > 0 && <p className="muted">{more} later lines are not shown (GET …/logs pages through them).</p>}
    </div>
  );
}

function LogRow({ line }: { line: LogLine }) {
  return (
    <li className={`log-${line.level}`}>
      <time dateTime={line.at}>{new Date(line.at).toLocaleTimeString()}</time> <span className="log-level">{line.level}</span>{' '}
      {line.attempt > 1 && <span className="muted">(attempt {line.attempt}) </span>}
      {line.message}
    </li>
  );
}
