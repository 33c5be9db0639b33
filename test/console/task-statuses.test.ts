import { describe, expect, it } from 'vitest';
import { BUILT_IN_STATUSES } from '../../src/tasks/schemas.js';
import { BOARD_STATUSES, parseStatuses, statusLabel } from '../../console/src/tasks/task-statuses.js';

describe('the Tasks board statuses', () => {
  it('starts with the built-in statuses of the tasks schema, in order', () => {
    expect(BOARD_STATUSES).toEqual(BUILT_IN_STATUSES);
  });

  it('labels a status as a heading', () => {
    expect(statusLabel('in_progress')).toBe('In progress');
    expect(statusLabel('todo')).toBe('Todo');
    expect(statusLabel('needs-review')).toBe('Needs review');
  });

  it('reads custom statuses from the URL: valid slugs, not built in, each once', () => {
    expect(parseStatuses('review,qa')).toEqual(['review', 'qa']);
    expect(parseStatuses(['review', ' review ', 'qa'])).toEqual(['review', 'qa']);
    expect(parseStatuses('todo,done,Review,9lives,a b')).toBeUndefined();
    expect(parseStatuses(undefined)).toBeUndefined();
    expect(parseStatuses(42)).toBeUndefined();
  });
});
