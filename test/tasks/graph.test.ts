import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cycleThrough, findPath, type Edge } from '../../src/tasks/graph.js';

const edge = (task_id: string, depends_on: string): Edge => ({ task_id, depends_on });

/** Kahn's algorithm: true when the edges can be ordered, i.e. form no cycle. */
function acyclic(nodes: string[], edges: Edge[]): boolean {
  const indegree = new Map(nodes.map((n) => [n, 0]));
  for (const e of edges) indegree.set(e.depends_on, (indegree.get(e.depends_on) ?? 0) + 1);
  const ready = nodes.filter((n) => indegree.get(n) === 0);
  let seen = 0;
  while (ready.length > 0) {
    const node = ready.pop()!;
    seen++;
    for (const e of edges) {
      if (e.task_id !== node) continue;
      indegree.set(e.depends_on, indegree.get(e.depends_on)! - 1);
      if (indegree.get(e.depends_on) === 0) ready.push(e.depends_on);
    }
  }
  return seen === nodes.length;
}

describe('findPath', () => {
  it('finds a shortest path along depends_on edges', () => {
    const edges = [edge('a', 'b'), edge('b', 'c'), edge('c', 'd'), edge('a', 'd')];
    expect(findPath(edges, 'a', 'd')).toEqual(['a', 'd']);
    expect(findPath(edges, 'b', 'd')).toEqual(['b', 'c', 'd']);
    expect(findPath(edges, 'd', 'a')).toBeNull();
    expect(findPath(edges, 'a', 'a')).toEqual(['a']);
    expect(findPath([], 'x', 'y')).toBeNull();
  });

  it('returns the cycle an edge would close, from the dependent back to itself', () => {
    const edges = [edge('a', 'b'), edge('b', 'c')];
    expect(cycleThrough(edges, 'c', 'a')).toEqual(['c', 'a', 'b', 'c']);
    expect(cycleThrough(edges, 'a', 'c')).toBeNull();
    expect(cycleThrough(edges, 'a', 'a')).toEqual(['a', 'a']);
  });

  it('keeps any sequence of accepted inserts acyclic, and rejects only real cycles', () => {
    const nodes = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    const node = fc.constantFrom(...nodes);
    fc.assert(
      fc.property(fc.array(fc.tuple(node, node), { maxLength: 40 }), (inserts) => {
        const edges: Edge[] = [];
        for (const [task, dependsOn] of inserts) {
          if (edges.some((e) => e.task_id === task && e.depends_on === dependsOn)) continue;
          const cycle = cycleThrough(edges, task, dependsOn);
          const candidate = [...edges, edge(task, dependsOn)];
          // Rejected exactly when the insert would make the graph cyclic.
          expect(cycle === null).toBe(acyclic(nodes, candidate));
          if (cycle === null) {
            edges.push(edge(task, dependsOn));
            continue;
          }
          // The reported cycle is real: it starts and ends at the task, each step an edge of the candidate graph.
          expect(cycle[0]).toBe(task);
          expect(cycle.at(-1)).toBe(task);
          for (let i = 0; i + 1 < cycle.length; i++) {
            expect(candidate.some((e) => e.task_id === cycle[i] && e.depends_on === cycle[i + 1])).toBe(true);
          }
        }
        expect(acyclic(nodes, edges)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
