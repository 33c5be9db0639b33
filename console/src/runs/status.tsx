import type { RunStatus, StepStatus } from './run-status.js';
import './status.css';

// The statuses themselves live in a plain module (pure code and its tests import it without JSX).
export { RUN_STATUSES, type RunStatus, type StepStatus } from './run-status.js';

/** A run's or a step's status as text in its colour (the text carries it: colour is never the only sign). */
export function StatusBadge({ status }: { status: RunStatus | StepStatus }) {
  return <span className={`badge status-${status}`}>{status}</span>;
}
