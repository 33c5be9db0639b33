/** A dependency edge: `task_id` depends on `depends_on`. */
export interface Edge {
  task_id: string;
  depends_on: string;
}

/**
 * A path from `from` to `to` following depends_on edges (both ends included), or null when
 * `to` cannot be reached. Breadth-first, so the path is a shortest one.
 */
export function findPath(edges: readonly Edge[], from: string, to: string): string[] | null {
  const next = new Map<string, string[]>();
  for (const edge of edges) {
    const list = next.get(edge.task_id);
    if (list) list.push(edge.depends_on);
    else next.set(edge.task_id, [edge.depends_on]);
  }
  const parent = new Map<string, string | null>([[from, null]]);
  let frontier = [from];
  while (frontier.length > 0) {
    const following: string[] = [];
    for (const node of frontier) {
      if (node === to) {
        const path: string[] = [];
        for (let at: string | null = node; at !== null; at = parent.get(at) ?? null) path.push(at);
        return path.reverse();
      }
      for (const target of next.get(node) ?? []) {
        if (parent.has(target)) continue;
        parent.set(target, node);
        following.push(target);
      }
    }
    frontier = following;
  }
  return null;
}

/**
 * The cycle that adding "`taskId` depends on `dependsOn`" would close, as the list of task ids
 * from `taskId` back to itself, or null when the edge keeps the graph acyclic.
 * `reachable` holds (at least) every edge reachable from `dependsOn`.
 */
export function cycleThrough(reachable: readonly Edge[], taskId: string, dependsOn: string): string[] | null {
  if (taskId === dependsOn) return [taskId, taskId];
  const path = findPath(reachable, dependsOn, taskId);
  return path === null ? null : [taskId, ...path];
}
