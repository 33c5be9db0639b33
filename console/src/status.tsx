import type { Item } from '../../src/client/browser.js';
import './status.css';

export type RunStatus = Item<'coordination.listRuns'>['status'];
export type StepStatus = Item<'coordination.listRuns'>['steps'][number]['status'];

/** Every run status, in the order a run goes through them (filters list them so). */
export const RUN_STATUSES: readonly RunStatus[] = ['running', 'waiting', 'completed', 'failed', 'cancelled'];

/** A run's or a step's status as text in its colour (the text carries it: colour is never the only sign). */
export function StatusBadge({ status }: { status: RunStatus | StepStatus }) {
  return <span className={`badge status-${status}`}>{status}</span>;
}
