import { Type } from '@sinclair/typebox';
import { Deleted, page, PageQuery } from '../../http/schemas.js';
import { AddCommentBody, Comment, CreateTaskBody, ListTasksQuery, Project, Task, TaskParams, UpdateTaskBody } from '../../tasks/schemas.js';
import { CREATE, define, DELETE, pagedOutput, READ, toolInput, UPDATE, type GroupTool, type ToolServices } from './define.js';

/** Projects and tasks: the spec's tools, on the routes' schemas. */
export function taskTools({ tasks }: ToolServices): GroupTool[] {
  return [
    define({
      name: 'create_task',
      permission: 'tasks:write',
      title: 'Create a task',
      description: 'Create a task in a project.',
      input: toolInput(CreateTaskBody),
      output: Task,
      annotations: CREATE,
      run: (args, principal) => tasks.createTask(args, principal),
    }),
    define({
      name: 'get_task',
      permission: 'tasks:read',
      title: 'Get a task',
      description: 'Get one task by id (tsk_…).',
      input: toolInput(TaskParams),
      output: Task,
      annotations: READ,
      run: ({ id }) => tasks.getTask(id),
    }),
    define({
      name: 'list_tasks',
      permission: 'tasks:read',
      title: 'List tasks',
      description: 'List tasks, oldest first, with filters; paged with limit/offset.',
      input: toolInput(ListTasksQuery),
      output: pagedOutput(Task),
      annotations: READ,
      run: ({ limit, offset, ...filter }) => tasks.listTasks(filter, page({ limit, offset })),
    }),
    define({
      name: 'update_task',
      permission: 'tasks:write',
      title: 'Update a task',
      description: 'Change some fields of a task by id; each change is logged in its activity with the caller as actor.',
      input: toolInput(Type.Composite([TaskParams, UpdateTaskBody])),
      output: Task,
      annotations: UPDATE,
      run: ({ id, ...patch }, principal) => tasks.updateTask(id, patch, principal),
    }),
    define({
      name: 'delete_task',
      permission: 'tasks:write',
      title: 'Delete a task',
      description: 'Delete a task by id, with its comments, dependencies and activity.',
      input: toolInput(TaskParams),
      output: Deleted.properties.data,
      annotations: DELETE,
      run: async ({ id }, principal) => {
        await tasks.deleteTask(id, principal);
        return { id, deleted: true as const };
      },
    }),
    define({
      name: 'add_comment',
      permission: 'tasks:write',
      title: 'Comment on a task',
      description: 'Comment on a task, as the caller.',
      input: toolInput(Type.Composite([TaskParams, AddCommentBody])),
      output: Comment,
      annotations: CREATE,
      run: ({ id, content }, principal) => tasks.addComment(id, content, principal),
    }),
    define({
      name: 'list_projects',
      permission: 'tasks:read',
      title: 'List projects',
      description: 'List projects, oldest first; paged with limit/offset.',
      input: toolInput(PageQuery),
      output: pagedOutput(Project),
      annotations: READ,
      run: (window) => tasks.listProjects(page(window)),
    }),
  ];
}
