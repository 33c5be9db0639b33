import { Type } from '@sinclair/typebox';
import { Deleted, page } from '../../http/schemas.js';
import {
  CreateRoutineBody,
  Execution,
  ListRoutinesQuery,
  Routine,
  RoutineParams,
  TriggerBody,
  UpdateRoutineBody,
} from '../../routines/schemas.js';
import { CREATE, define, DELETE, DISPATCH, pagedOutput, READ, toolInput, UPDATE, type GroupTool, type ToolServices } from './define.js';

const ROUTINE_ID = { id: 'Routine id (rtn_…)' };

/** Routines: the spec's tools, on the routes' schemas. */
export function routineTools({ routines }: ToolServices): GroupTool[] {
  return [
    define({
      name: 'create_routine',
      permission: 'routines:write',
      title: 'Create a routine',
      description: 'Create a routine: a cron schedule or a webhook that sends routine.execute to an agent inbox.',
      input: toolInput(CreateRoutineBody),
      output: Routine,
      annotations: CREATE,
      run: (args, principal) => routines.create(args, principal.actor),
    }),
    define({
      name: 'list_routines',
      permission: 'routines:read',
      title: 'List routines',
      description: 'List routines, optionally filtered by trigger_type and enabled; paged with limit/offset.',
      input: toolInput(ListRoutinesQuery, { enabled: 'true: only enabled routines; false: only paused ones' }),
      output: pagedOutput(Routine),
      annotations: READ,
      run: ({ trigger_type, enabled, last_status, ...window }) => routines.list({ trigger_type, enabled, last_status }, page(window)),
    }),
    define({
      name: 'get_routine',
      permission: 'routines:read',
      title: 'Get a routine',
      description: 'Get one routine by id (rtn_…).',
      input: toolInput(RoutineParams, ROUTINE_ID),
      output: Routine,
      annotations: READ,
      run: ({ id }) => routines.get(id),
    }),
    define({
      name: 'update_routine',
      permission: 'routines:write',
      title: 'Update a routine',
      description: 'Change some fields of a routine by id; enabled=false pauses it, true resumes it.',
      input: toolInput(Type.Composite([RoutineParams, UpdateRoutineBody]), ROUTINE_ID),
      output: Routine,
      annotations: UPDATE,
      run: ({ id, ...patch }, principal) => routines.update(id, patch, principal),
    }),
    define({
      name: 'delete_routine',
      permission: 'routines:write',
      title: 'Delete a routine',
      description: 'Delete a routine by id, with its executions and fire history.',
      input: toolInput(RoutineParams, ROUTINE_ID),
      output: Deleted.properties.data,
      annotations: DELETE,
      run: async ({ id }, principal) => {
        await routines.delete(id, principal);
        return { id, deleted: true as const };
      },
    }),
    define({
      name: 'trigger_routine',
      permission: 'routines:write',
      title: 'Run a routine now',
      description:
        "Run a routine now, regardless of its schedule; returns the execution. payload replaces the routine's payload for this run.",
      input: toolInput(Type.Composite([RoutineParams, TriggerBody.anyOf[0]]), ROUTINE_ID),
      output: Execution,
      annotations: DISPATCH,
      run: ({ id, payload, reason }, principal) => routines.trigger(id, { payload, reason }, principal.actor),
    }),
  ];
}
