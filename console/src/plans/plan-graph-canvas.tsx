import { Controls, Handle, MarkerType, Position, ReactFlow, type Edge, type Node, type NodeProps } from '@xyflow/react';
import '@xyflow/react/dist/style.css';
import { useMemo } from 'react';
import type { PlanGraphProps } from './plan-graph.js';
import { layoutPlan, NODE_HEIGHT, NODE_WIDTH, type PlanEdge } from './plan-layout.js';
import type { StepStatus } from '../runs/run-status.js';
import './plan-graph.css';
import '../runs/status.css';

type StepNodeData = { id: string; type: string; status: StepStatus | undefined };
type StepNode = Node<StepNodeData, 'step'>;

/** A step: its id, type and status as text (the colour repeats the status, never replaces it). */
function StepNodeView({ data }: NodeProps<StepNode>) {
  return (
    <div className="plan-node-body" data-step={data.id} data-status={data.status}>
      <Handle type="target" position={Position.Top} isConnectable={false} />
      <strong>{data.id}</strong>
      <span className="plan-node-meta">
        {data.type}
        {data.status && <> · {data.status}</>}
      </span>
      <Handle type="source" position={Position.Bottom} isConnectable={false} />
    </div>
  );
}

const NODE_TYPES = { step: StepNodeView };
const EDGE_LABELS: Record<PlanEdge['kind'], string | undefined> = {
  depends_on: undefined,
  then: 'then',
  else: 'else',
  parallel: 'parallel',
};
// The graph's height follows the plan's, within what a page can spare.
const MIN_HEIGHT = 140;
const MAX_HEIGHT = 520;

/** What a screen reader says on a node: its step, type and status, and what it follows. */
function nodeLabel(data: StepNodeData, incoming: PlanEdge[]): string {
  const after = incoming.map((edge) => (edge.kind === 'depends_on' ? edge.source : `${edge.source} (${edge.kind})`));
  return [`Step ${data.id}, ${data.type}`, data.status, after.length > 0 ? `after ${after.join(', ')}` : undefined]
    .filter(Boolean)
    .join('; ');
}

export default function PlanGraphCanvas({ steps, statuses, label }: PlanGraphProps) {
  const { nodes, edges, height } = useMemo(() => {
    const layout = layoutPlan(steps);
    const nodes: StepNode[] = layout.placed.map(({ step, x, y }) => {
      const data = { id: step.id, type: step.type, status: statuses?.[step.id] };
      return {
        id: step.id,
        type: 'step',
        position: { x, y },
        data,
        width: NODE_WIDTH,
        height: NODE_HEIGHT,
        className: `plan-node status-${data.status ?? 'none'}`,
        ariaLabel: nodeLabel(
          data,
          layout.edges.filter((edge) => edge.target === step.id),
        ),
        draggable: false,
        connectable: false,
      };
    });
    const edges: Edge[] = layout.edges.map((edge) => ({
      id: edge.id,
      source: edge.source,
      target: edge.target,
      label: EDGE_LABELS[edge.kind],
      className: `plan-edge plan-edge-${edge.kind}`,
      markerEnd: { type: MarkerType.ArrowClosed },
      focusable: false,
    }));
    return { nodes, edges, height: Math.min(MAX_HEIGHT, Math.max(MIN_HEIGHT, layout.height + 24)) };
  }, [steps, statuses]);

  return (
    <div className="plan-graph" style={{ height }} role="figure" aria-label={label}>
      <ReactFlow
        nodes={nodes}
        edges={edges}
        nodeTypes={NODE_TYPES}
        colorMode="system"
        fitView
        fitViewOptions={{ maxZoom: 1, padding: 0.1 }}
        minZoom={0.2}
        nodesDraggable={false}
        nodesConnectable={false}
        edgesFocusable={false}
        zoomOnScroll={false}
        preventScrolling={false}
      >
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}
