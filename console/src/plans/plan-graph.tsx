import { lazy, Suspense } from 'react';
import type { PlanStep } from './plan-layout.js';
import type { StepStatus } from '../runs/run-status.js';

export interface PlanGraphProps {
  steps: readonly PlanStep[];
  /** A run's step statuses by step id: the nodes take their colour and status text (none: the plan alone). */
  statuses?: Readonly<Record<string, StepStatus>>;
  /** What the graph shows, for screen readers ("Steps of plan nightly-report"). */
  label: string;
}

// React Flow and dagre load with the first graph shown, not with the console's first page.
const PlanGraphCanvas = lazy(() => import('./plan-graph-canvas.js'));

/** A plan's steps as a graph (React Flow, laid out by dagre), coloured by a run's step statuses when given. */
export function PlanGraph(props: PlanGraphProps) {
  return (
    <Suspense fallback={<p className="muted">Drawing the plan…</p>}>
      <PlanGraphCanvas {...props} />
    </Suspense>
  );
}
