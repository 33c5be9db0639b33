/*
 * A plan's steps as a graph, laid out by dagre: pure (no DOM, no React), unit-tested in
 * test/console/plan-layout.test.ts. Only the lazily loaded graph chunk imports it.
 */
import dagre from '@dagrejs/dagre';
import type { Item } from '../../../src/client/browser.js';

/** A step of a plan as the API returns it. */
export type PlanStep = Item<'coordination.listPlans'>['steps'][number];

/** Why one step follows another: it depends on it, it is a branch of a condition, or a parallel group starts it. */
export type EdgeKind = 'depends_on' | 'then' | 'else' | 'parallel';

export interface PlanEdge {
  id: string;
  source: string;
  target: string;
  kind: EdgeKind;
}

export interface PlacedStep {
  step: PlanStep;
  /** Top-left corner, as React Flow places nodes. */
  x: number;
  y: number;
}

/** The size of a step's node: the graph's CSS gives its nodes this size. */
export const NODE_WIDTH = 190;
export const NODE_HEIGHT = 64;

const asList = (value: string | string[] | undefined): string[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/** The edges the engine follows (design: depends_on, a condition's then/else, a parallel group's steps), to steps that exist. */
export function planEdges(steps: readonly PlanStep[]): PlanEdge[] {
  const known = new Set(steps.map((step) => step.id));
  const edges = new Map<string, PlanEdge>();
  const add = (source: string, target: string, kind: EdgeKind) => {
    const id = `${source}->${target}`;
    // A branch target usually also depends on its condition: one edge, labelled with the branch.
    if (known.has(source) && known.has(target) && (!edges.has(id) || kind !== 'depends_on')) edges.set(id, { id, source, target, kind });
  };
  for (const step of steps) {
    for (const dependency of step.depends_on ?? []) add(dependency, step.id, 'depends_on');
    if (step.type === 'condition') {
      for (const target of asList(step.then)) add(step.id, target, 'then');
      for (const target of asList(step.else)) add(step.id, target, 'else');
    }
    if (step.type === 'parallel') for (const child of step.steps ?? []) add(step.id, child, 'parallel');
  }
  return [...edges.values()];
}

/** Every step placed top to bottom in dependency order (dagre), with the edges between them. */
export function layoutPlan(steps: readonly PlanStep[]): { placed: PlacedStep[]; edges: PlanEdge[]; width: number; height: number } {
  const edges = planEdges(steps);
  const graph = new dagre.graphlib.Graph();
  graph.setGraph({ rankdir: 'TB', nodesep: 32, ranksep: 48, marginx: 8, marginy: 8 });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const step of steps) graph.setNode(step.id, { width: NODE_WIDTH, height: NODE_HEIGHT });
  for (const edge of edges) graph.setEdge(edge.source, edge.target);
  dagre.layout(graph);
  const placed = steps.map((step) => {
    const node = graph.node(step.id);
    // dagre gives centres; React Flow wants corners.
    return { step, x: (node.x ?? 0) - NODE_WIDTH / 2, y: (node.y ?? 0) - NODE_HEIGHT / 2 };
  });
  const size = graph.graph();
  return { placed, edges, width: size.width ?? 0, height: size.height ?? 0 };
}
