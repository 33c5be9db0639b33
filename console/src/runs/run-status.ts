import type { Item } from '../../../src/client/browser.js';

export type RunStatus = Item<'coordination.listRuns'>['status'];
export type StepStatus = Item<'coordination.listRuns'>['steps'][number]['status'];

/** Every run status, in the order a run goes through them (filters list them so). */
export const RUN_STATUSES: readonly RunStatus[] = ['queued', 'running', 'waiting', 'completed', 'failed', 'cancelled'];
