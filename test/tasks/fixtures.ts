import { expect } from 'vitest';
import type { Api } from '../helpers/api.js';

export const CORE = '/core/api/v1';

/** Creates a project and returns it (asserting the 201). */
export async function createProject(api: Api, body: Record<string, unknown> = { name: 'project' }): Promise<any> {
  const res = await api.post(`${CORE}/projects`, body);
  expect(res.status, res.text).toBe(201);
  return res.body.data;
}

/** Creates a task and returns it (asserting the 201). */
export async function createTask(api: Api, body: Record<string, unknown> = {}): Promise<any> {
  const res = await api.post(`${CORE}/tasks`, { title: 'task', ...body });
  expect(res.status, res.text).toBe(201);
  return res.body.data;
}

export async function getTask(api: Api, id: string): Promise<any> {
  const res = await api.get(`${CORE}/tasks/${id}`);
  expect(res.status, res.text).toBe(200);
  return res.body.data;
}

export async function patchTask(api: Api, id: string, body: Record<string, unknown>): Promise<any> {
  const res = await api.patch(`${CORE}/tasks/${id}`, body);
  expect(res.status, res.text).toBe(200);
  return res.body.data;
}

/** Makes `taskId` depend on `dependsOn` and returns the dependency (asserting the 201). */
export async function addDependency(api: Api, taskId: string, dependsOn: string): Promise<any> {
  const res = await api.post(`${CORE}/tasks/${taskId}/dependencies`, { depends_on: dependsOn });
  expect(res.status, res.text).toBe(201);
  return res.body.data;
}

/** The whole activity log of a task as [actor, action, from, to] tuples, oldest first. */
export async function activityOf(api: Api, id: string): Promise<[string, string, string | null, string | null][]> {
  const res = await api.get(`${CORE}/tasks/${id}/activity?limit=500`);
  expect(res.status, res.text).toBe(200);
  return res.body.data.map((e: any) => [e.actor, e.action, e.from, e.to]);
}

/** A task's depends_on agrees with its dependency list (same ids, oldest first). */
export async function expectConsistentDependencies(api: Api, ids: string[]): Promise<void> {
  for (const id of ids) {
    const listed = await api.get(`${CORE}/tasks/${id}/dependencies`);
    expect(listed.status, listed.text).toBe(200);
    expect((await getTask(api, id)).depends_on, id).toEqual(listed.body.data.map((d: any) => d.depends_on));
  }
}
