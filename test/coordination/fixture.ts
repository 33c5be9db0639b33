import { afterEach, expect } from 'vitest';
import type { Dialect } from '../helpers/database.js';
import { useServer, type StartOptions } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

export const P = '/api/v1/coordination/plans';
export const R = '/api/v1/coordination/runs';

/**
 * A server for a coordination suite (shared by the file) with the calls its tests make:
 * plans under unique aliases, runs, waiting for a run to finish, and agent loops stopped
 * after each test.
 */
export function useCoordination(dialect: Dialect, options: StartOptions = {}) {
  const server = useServer(dialect, options);
  const loops: { stop(): Promise<void> }[] = [];
  afterEach(async () => {
    await Promise.all(loops.splice(0).map((l) => l.stop()));
  });

  let seq = 0;
  /** A unique name per test (the server is shared by the file). */
  const unique = (name: string) => `${name}-${dialect}-${++seq}`;

  async function plan(body: Record<string, unknown>): Promise<string> {
    const res = await server.api.post(P, { alias: unique('plan'), ...body });
    expect(res.status, res.text).toBe(201);
    return res.body.data.id as string;
  }

  async function start(planId: string, input: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
    const res = await server.api.post(R, { plan_id: planId, input, ...extra });
    expect(res.status, res.text).toBe(201);
    return res.body.data;
  }

  const getRun = async (id: string) => (await server.api.get(`${R}/${id}`)).body.data;
  const finished = (id: string, status = 'completed') =>
    waitFor(async () => {
      const run = await getRun(id);
      return run.status === status ? run : null;
    }, 15_000);

  return { server, loops, unique, plan, start, getRun, finished };
}
