import { describe, expect, it } from 'vitest';
import { queryKeys as keys } from '../../console/src/query-keys.js';

/** Whether invalidating `prefix` reaches the query `key`: its leading parts are equal (TanStack matches keys by prefix). */
const reaches = (prefix: readonly unknown[], key: readonly unknown[]) =>
  prefix.length <= key.length && prefix.every((part, index) => JSON.stringify(part) === JSON.stringify(key[index]));

describe('the console’s query keys', () => {
  it('nest what belongs to one resource below it, and everything below the resource’s root', () => {
    expect(reaches(keys.runs.all, keys.runs.events('run_1', 0))).toBe(true);
    expect(reaches(keys.runs.detail('run_1'), keys.runs.events('run_1', 20))).toBe(true);
    expect(reaches(keys.runs.detail('run_1'), keys.runs.detail('run_2'))).toBe(false);
    expect(reaches(keys.tasks.detail('tsk_1'), keys.tasks.comments('tsk_1', 0))).toBe(true);
    expect(reaches(keys.tasks.detail('tsk_1'), keys.tasks.activity('tsk_1', 0))).toBe(true);
    expect(reaches(keys.tasks.detail('tsk_1'), keys.tasks.dependencies('tsk_1'))).toBe(true);
    expect(reaches(keys.tasks.all, keys.tasks.board('prj_1', 'todo'))).toBe(true);
    expect(reaches(keys.agents.detail('a'), keys.agents.health('a'))).toBe(true);
    expect(reaches(keys.agents.inbox('a'), keys.agents.inboxMessages('a', 'dead', 0))).toBe(true);
    expect(reaches(keys.agents.inbox('a'), keys.agents.capabilities('a'))).toBe(false);
    expect(reaches(keys.webhooks.deliveries('wh_1'), keys.webhooks.deliveriesPage('wh_1', { offset: 0 }))).toBe(true);
    expect(reaches(keys.routines.all, keys.routines.executions('rtn_1', 0))).toBe(true);
  });

  it('keep out of a refresh what it must not reload', () => {
    // An artifact's bytes are addressed by hash: a live refresh of the artifacts never downloads them again.
    expect(reaches(keys.artifacts.all, keys.artifactContent('art_1', 1, 'abc'))).toBe(false);
    // A retry or test refreshes the deliveries, not the attempts already opened.
    expect(reaches(keys.webhooks.deliveries('wh_1'), keys.webhooks.attempts('dlv_1', 2))).toBe(false);
    // A page of runs and the recent runs of a plan are different queries.
    expect(keys.runs.list({ plan: 'p', offset: 0 })).not.toEqual(keys.runs.list({ plan: 'p', recent: true }));
  });
});
