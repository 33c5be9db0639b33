import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { created, deleted, list, ok } from '../http/reply.js';
import { DataEnvelope, Deleted, ListEnvelope, page, PageQuery } from '../http/schemas.js';
import {
  Activity,
  AddCommentBody,
  AddDependencyBody,
  ClaimBody,
  Comment,
  CreateTaskBody,
  DeleteProjectQuery,
  Dependency,
  DependencyParams,
  ListProjectsQuery,
  ListTasksQuery,
  Project,
  ProjectBody,
  ProjectParams,
  Task,
  TaskParams,
  UpdateTaskBody,
} from './schemas.js';
import type { TasksService } from './service.js';

const projectTags = ['projects'];
const tags = ['tasks'];

export function tasksRoutes(service: TasksService): FastifyPluginAsyncTypebox {
  return async (app) => {
    // ---- projects ----

    app.get(
      '/projects',
      {
        config: { permission: 'tasks:read' },
        schema: {
          tags: projectTags,
          summary: 'List projects, oldest first',
          querystring: ListProjectsQuery,
          response: { 200: ListEnvelope(Project) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.listProjects(window), window);
      },
    );

    app.post(
      '/projects',
      {
        config: { permission: 'tasks:write' },
        schema: { tags: projectTags, summary: 'Create a project', body: ProjectBody, response: { 201: DataEnvelope(Project) } },
      },
      async (request, reply) => created(reply, await service.createProject(request.body, request.principal)),
    );

    app.get(
      '/projects/:id',
      {
        config: { permission: 'tasks:read' },
        schema: { tags: projectTags, summary: 'Get a project', params: ProjectParams, response: { 200: DataEnvelope(Project) } },
      },
      async (request, reply) => ok(reply, await service.getProject(request.params.id)),
    );

    app.put(
      '/projects/:id',
      {
        config: { permission: 'tasks:write' },
        schema: {
          tags: projectTags,
          summary: 'Replace a project’s name and description',
          params: ProjectParams,
          body: ProjectBody,
          response: { 200: DataEnvelope(Project) },
        },
      },
      async (request, reply) => ok(reply, await service.replaceProject(request.params.id, request.body, request.principal)),
    );

    app.delete(
      '/projects/:id',
      {
        config: {
          permission: 'tasks:write',
          conflict: 'The project has tasks and cascade is not true (`error.details.tasks` counts them)',
        },
        schema: {
          tags: projectTags,
          summary: 'Delete a project (409 while it has tasks, unless cascade=true deletes them too)',
          params: ProjectParams,
          querystring: DeleteProjectQuery,
          response: { 200: Deleted },
        },
      },
      async (request, reply) => {
        await service.deleteProject(request.params.id, request.principal, { cascade: request.query.cascade });
        return deleted(reply, request.params.id);
      },
    );

    // ---- tasks ----

    app.get(
      '/tasks',
      {
        config: { permission: 'tasks:read' },
        schema: {
          tags,
          summary: 'List tasks, oldest first, with filters',
          querystring: ListTasksQuery,
          response: { 200: ListEnvelope(Task) },
        },
      },
      async (request, reply) => {
        const { limit: _limit, offset: _offset, ...filter } = request.query;
        const window = page(request.query);
        return list(reply, await service.listTasks(filter, window), window);
      },
    );

    app.post(
      '/tasks',
      {
        config: { permission: 'tasks:write' },
        schema: { tags, summary: 'Create a task', body: CreateTaskBody, response: { 201: DataEnvelope(Task) } },
      },
      async (request, reply) => created(reply, await service.createTask(request.body, request.principal)),
    );

    app.get(
      '/tasks/:id',
      {
        config: { permission: 'tasks:read' },
        schema: { tags, summary: 'Get a task', params: TaskParams, response: { 200: DataEnvelope(Task) } },
      },
      async (request, reply) => ok(reply, await service.getTask(request.params.id)),
    );

    app.patch(
      '/tasks/:id',
      {
        config: { permission: 'tasks:write' },
        schema: {
          tags,
          summary: 'Change some fields of a task (each change is logged in its activity)',
          params: TaskParams,
          body: UpdateTaskBody,
          response: { 200: DataEnvelope(Task) },
        },
      },
      async (request, reply) => ok(reply, await service.updateTask(request.params.id, request.body, request.principal)),
    );

    app.delete(
      '/tasks/:id',
      {
        config: { permission: 'tasks:write' },
        schema: {
          tags,
          summary: 'Delete a task with its comments, dependencies and activity',
          params: TaskParams,
          response: { 200: Deleted },
        },
      },
      async (request, reply) => {
        await service.deleteTask(request.params.id, request.principal);
        return deleted(reply, request.params.id);
      },
    );

    app.post(
      '/tasks/:id/claim',
      {
        config: {
          permission: 'tasks:write',
          conflict:
            'The task is held by another agent, has another status than expected_status, is done, is blocked by open dependencies, or changed while it was claimed (the message says which)',
        },
        schema: {
          tags,
          summary: 'Atomically assign a task to the caller and start it (409 if held by another, blocked, or not in expected_status)',
          params: TaskParams,
          body: Type.Optional(ClaimBody),
          response: { 200: DataEnvelope(Task) },
        },
      },
      async (request, reply) => ok(reply, await service.claimTask(request.params.id, request.body ?? {}, request.principal)),
    );

    app.post(
      '/tasks/:id/release',
      {
        config: { permission: 'tasks:write', conflict: 'The task is held by no one or by another agent, or changed while it was released' },
        schema: {
          tags,
          summary: 'Give a claimed task back (unassigned; in_progress returns to todo)',
          params: TaskParams,
          response: { 200: DataEnvelope(Task) },
        },
      },
      async (request, reply) => ok(reply, await service.releaseTask(request.params.id, request.principal)),
    );

    // ---- dependencies ----

    app.get(
      '/tasks/:id/dependencies',
      {
        config: { permission: 'tasks:read' },
        schema: {
          tags,
          summary: 'The dependencies of a task, oldest first',
          params: TaskParams,
          response: { 200: DataEnvelope(Type.Array(Dependency)) },
        },
      },
      async (request, reply) => ok(reply, await service.listDependencies(request.params.id)),
    );

    app.post(
      '/tasks/:id/dependencies',
      {
        config: {
          permission: 'tasks:write',
          conflict: 'The task depends on it already, or the dependency would make a cycle (`error.details.cycle` lists it)',
        },
        schema: {
          tags,
          summary: 'Make the task depend on another (409 for self, duplicate or cycle)',
          params: TaskParams,
          body: AddDependencyBody,
          response: { 201: DataEnvelope(Dependency) },
        },
      },
      async (request, reply) => created(reply, await service.addDependency(request.params.id, request.body.depends_on, request.principal)),
    );

    app.delete(
      '/tasks/:id/dependencies/:dep_id',
      {
        config: { permission: 'tasks:write' },
        schema: { tags, summary: 'Remove a dependency', params: DependencyParams, response: { 200: Deleted } },
      },
      async (request, reply) => deleted(reply, await service.removeDependency(request.params.id, request.params.dep_id, request.principal)),
    );

    // ---- comments and activity ----

    app.get(
      '/tasks/:id/comments',
      {
        config: { permission: 'tasks:read' },
        schema: {
          tags,
          summary: 'The comments on a task, oldest first',
          params: TaskParams,
          querystring: PageQuery,
          response: { 200: ListEnvelope(Comment) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.listComments(request.params.id, window), window);
      },
    );

    app.post(
      '/tasks/:id/comments',
      {
        config: { permission: 'tasks:write' },
        schema: { tags, summary: 'Comment on a task', params: TaskParams, body: AddCommentBody, response: { 201: DataEnvelope(Comment) } },
      },
      async (request, reply) => created(reply, await service.addComment(request.params.id, request.body.content, request.principal)),
    );

    app.get(
      '/tasks/:id/activity',
      {
        config: { permission: 'tasks:read' },
        schema: {
          tags,
          summary: 'Every change to a task, oldest first',
          params: TaskParams,
          querystring: PageQuery,
          response: { 200: ListEnvelope(Activity) },
        },
      },
      async (request, reply) => {
        const window = page(request.query);
        return list(reply, await service.listActivity(request.params.id, window), window);
      },
    );
  };
}
