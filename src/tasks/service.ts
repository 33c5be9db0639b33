import { actingAgent, actsForPlatform, assertMayChange, type Principal } from '../auth/index.js';
import { autocommit, type Tx } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import type { AuditTrail, EventLog, Inbox, NewEvent } from '../kernel/ports.js';
import { ActivityLog, diffTask, PATCHABLE, type Change } from './activity.js';
import { cycleThrough } from './graph.js';
import { Projects } from './projects.js';
import {
  DONE,
  type Activity,
  type Comment,
  type CreateTaskBody,
  type Dependency,
  type Project,
  type ProjectBody,
  type Task,
  type TaskFilter,
  type UpdateTaskBody,
} from './schemas.js';
import type { AdjustedTask, CommentRow, DependencyRow, TaskRow, TaskScope, TasksStore } from './store.js';

export const TASK_UNBLOCKED = 'task.unblocked';
const PLATFORM_SENDER = 'switchboard';
const IN_PROGRESS = 'in_progress';
const TODO = 'todo';

export interface TasksDeps {
  store: TasksStore;
  clock: Clock;
  /** Messaging's inbox, for `task.unblocked`; without it nothing is sent. */
  inbox?: Inbox;
  /** task.created, task.updated, task.unblocked, task.deleted. */
  events: EventLog;
  audit: AuditTrail;
}

/** The payload of a `task.unblocked` message. */
export interface UnblockedPayload {
  task_id: string;
  project_id: string | null;
  title: string;
  /** The dependency whose completion (or removal) unblocked the task. */
  unblocked_by: string;
}

const isDone = (status: string) => status === DONE;

/** The task's depends_on (JSON) without the given ids. */
function without(task: Pick<TaskRow, 'depends_on'>, removed: string[]): string {
  return JSON.stringify((JSON.parse(task.depends_on) as string[]).filter((id) => !removed.includes(id)));
}

function toTask(row: TaskRow): Task {
  return {
    id: row.id,
    project_id: row.project_id,
    title: row.title,
    description: row.description,
    status: row.status,
    assigned_to: row.assigned_to,
    priority: row.priority as Task['priority'],
    created_by: row.created_by,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    depends_on: JSON.parse(row.depends_on) as string[],
    blocked: row.open_dependencies > 0,
  };
}

function toDependency(row: DependencyRow): Dependency {
  return { id: row.id, task_id: row.task_id, depends_on: row.depends_on, created_by: row.created_by, created_at: iso(row.created_at) };
}

function toComment(row: CommentRow): Comment {
  return { id: row.id, task_id: row.task_id, author: row.author, content: row.content, created_at: iso(row.created_at) };
}

/** 403 unless `principal` may change `task`: its creator, its assignee, or one acting for the platform. */
function assertMayChangeTask(principal: Principal, task: TaskRow): void {
  assertMayChange(principal, { type: 'task', id: task.id, createdBy: task.created_by, assignedTo: task.assigned_to });
}

/**
 * Tasks: CRUD with a complete activity log (activity.ts), dependencies that keep the graph
 * acyclic and make tasks blocked, comments, and atomic claims; the door to projects too
 * (projects.ts). Every change and its activity entries are written in one transaction; when
 * the last open dependency of a task goes away, its assignee gets one `task.unblocked` message
 * in that same transaction.
 */
export class TasksService {
  private readonly activity: ActivityLog;
  private readonly projects: Projects;

  constructor(private readonly deps: TasksDeps) {
    this.activity = new ActivityLog(deps);
    this.projects = new Projects({ ...deps, removeTasks: (tx, scope, actor) => this.removeTasks(tx, scope, actor) });
  }

  private get store() {
    return this.deps.store;
  }

  private now(): number {
    return this.deps.clock.now();
  }

  // ---- projects (Projects) ----

  createProject(input: ProjectBody, principal: Principal): Promise<Project> {
    return this.projects.create(input, principal);
  }

  getProject(id: string): Promise<Project> {
    return this.projects.get(id);
  }

  listProjects(window: Page): Promise<Paged<Project>> {
    return this.projects.list(window);
  }

  replaceProject(id: string, input: ProjectBody, principal: Principal): Promise<Project> {
    return this.projects.replace(id, input, principal);
  }

  deleteProject(id: string, principal: Principal, options: { cascade?: boolean } = {}): Promise<void> {
    return this.projects.delete(id, principal, options);
  }

  // ---- tasks ----

  async createTask(input: CreateTaskBody, principal: Principal): Promise<Task> {
    const now = this.now();
    const dependsOn = input.depends_on ?? [];
    return this.store.inTransaction(async (tx) => {
      if (input.project_id !== undefined) await this.requireProject(tx, input.project_id);
      // Locked so a dependency cannot become done between counting it open and the insert.
      const upstream = await this.store.lockTasks(tx, dependsOn);
      const missing = dependsOn.find((id) => !upstream.some((t) => t.id === id));
      if (missing !== undefined) throw new NotFound('Task', missing);
      const row: TaskRow = {
        id: newId('tsk', now),
        project_id: input.project_id ?? null,
        title: input.title,
        description: input.description ?? null,
        status: input.status ?? TODO,
        assigned_to: input.assigned_to ?? null,
        priority: input.priority ?? 'none',
        open_dependencies: upstream.filter((t) => !isDone(t.status)).length,
        depends_on: JSON.stringify(dependsOn),
        created_by: principal.actor,
        created_at: now,
        updated_at: now,
      };
      await this.deps.audit.record(tx, { action: 'task.create', resource: { type: 'task', id: row.id } });
      await this.referencing(() => this.store.insertTask(tx, row), 'Project', row.project_id);
      // A new task has no dependents yet, so these edges cannot close a cycle.
      await this.store.insertDependencies(
        tx,
        dependsOn.map((target) => ({
          id: newId('dep', now),
          task_id: row.id,
          depends_on: target,
          created_by: principal.actor,
          created_at: now,
        })),
      );
      await this.activity.record(tx, row.id, principal.actor, [
        { action: 'created', from: null, to: row.title },
        ...dependsOn.map((target): Change => ({ action: 'dependency_added', from: null, to: target })),
      ]);
      const task = toTask(row);
      await this.deps.events.append(tx, { type: 'task.created', subject: task.id, actor: principal.actor, data: { task } });
      return task;
    });
  }

  async getTask(id: string): Promise<Task> {
    const row = await this.store.findTask(autocommit, id);
    if (!row) throw new NotFound('Task', id);
    return toTask(row);
  }

  async listTasks(filter: TaskFilter, window: Page): Promise<Paged<Task>> {
    const page = await this.store.listTasks(autocommit, filter, window);
    return mapPage(page, toTask);
  }

  async updateTask(id: string, patch: UpdateTaskBody, principal: Principal): Promise<Task> {
    return this.store.inTransaction(async (tx) => {
      const [before] = await this.store.lockTasks(tx, [id]);
      if (!before) throw new NotFound('Task', id);
      assertMayChangeTask(principal, before);
      const changes = diffTask(before, patch);
      if (changes.length === 0) return toTask(before);
      await this.deps.audit.record(tx, { action: 'task.update', resource: { type: 'task', id } });
      if (patch.project_id != null && patch.project_id !== before.project_id) {
        await this.requireProject(tx, patch.project_id);
      }
      const fields: Partial<TaskRow> = { updated_at: this.now() };
      for (const [field] of PATCHABLE) if (patch[field] !== undefined) Object.assign(fields, { [field]: patch[field] });
      const after = await this.referencing(() => this.store.updateTask(tx, id, fields), 'Project', patch.project_id);
      await this.activity.record(tx, id, principal.actor, changes);
      const unblocked = await this.statusMoved(tx, before.status, after, principal.actor);
      return this.updated(tx, after, changes, principal.actor, unblocked);
    });
  }

  async deleteTask(id: string, principal: Principal): Promise<void> {
    await this.store.inTransaction(async (tx) => {
      const [task] = await this.store.lockTasks(tx, [id]);
      if (!task) throw new NotFound('Task', id);
      assertMayChangeTask(principal, task);
      await this.deps.audit.record(tx, { action: 'task.delete', resource: { type: 'task', id } });
      if ((await this.removeTasks(tx, { taskId: id }, principal.actor)) === 0) throw new NotFound('Task', id);
    });
  }

  /**
   * Claims a task for an agent (the caller unless an admin names one): in one conditional
   * UPDATE it is assigned to the agent and moved to in_progress, but only while nobody else
   * holds it, it has the expected status (any but done when none is given) and it is not
   * blocked. Racing claimers queue on the row; exactly one wins, the others get 409.
   */
  async claimTask(id: string, input: { expected_status?: string; agent_id?: string }, principal: Principal): Promise<Task> {
    const agent = actingAgent(principal, input.agent_id);
    return this.store.inTransaction(async (tx) => {
      const before = await this.store.findTask(tx, id);
      if (!before) throw new NotFound('Task', id);
      this.assertClaimable(before, agent, input.expected_status);
      if (before.assigned_to === agent && before.status === IN_PROGRESS) return toTask(before);
      await this.deps.audit.record(tx, { action: 'task.claim', resource: { type: 'task', id } });
      const after = await this.store.claimTask(tx, id, before.status, agent, this.now());
      if (!after) {
        // Someone changed the task between the read and the update: explain with what is there now.
        const current = await this.store.findTask(tx, id);
        if (!current) throw new NotFound('Task', id);
        this.assertClaimable(current, agent, input.expected_status);
        throw new Conflict(`Task '${id}' changed while it was being claimed; read it and try again`);
      }
      const changes: Change[] = [];
      if (before.assigned_to !== agent) changes.push({ action: 'claimed', from: before.assigned_to, to: agent });
      if (before.status !== after.status) changes.push({ action: 'status_changed', from: before.status, to: after.status });
      await this.activity.record(tx, id, principal.actor, changes);
      const unblocked = await this.statusMoved(tx, before.status, after, principal.actor);
      return this.updated(tx, after, changes, principal.actor, unblocked);
    });
  }

  private assertClaimable(task: TaskRow, agent: string, expectedStatus: string | undefined): void {
    if (task.assigned_to !== null && task.assigned_to !== agent) {
      throw new Conflict(`Task '${task.id}' is held by '${task.assigned_to}'`, { assigned_to: task.assigned_to, status: task.status });
    }
    if (expectedStatus !== undefined && task.status !== expectedStatus) {
      throw new Conflict(`Task '${task.id}' has status '${task.status}', not '${expectedStatus}'`, { status: task.status });
    }
    if (expectedStatus === undefined && isDone(task.status)) {
      throw new Conflict(`Task '${task.id}' is done; pass expected_status 'done' to reopen and claim it`, { status: task.status });
    }
    if (task.open_dependencies > 0) {
      throw new Conflict(
        `Task '${task.id}' is blocked by ${task.open_dependencies} open dependenc${task.open_dependencies === 1 ? 'y' : 'ies'}`,
        {
          open_dependencies: task.open_dependencies,
        },
      );
    }
  }

  /**
   * Gives a claimed task back: unassigned, and in_progress returns to todo. An agent may only
   * release what it holds; an admin may release any task.
   */
  async releaseTask(id: string, principal: Principal): Promise<Task> {
    return this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'task.release', resource: { type: 'task', id } });
      const before = await this.store.findTask(tx, id);
      if (!before) throw new NotFound('Task', id);
      const holder = before.assigned_to;
      if (holder === null) throw new Conflict(`Task '${id}' is not assigned to anyone`);
      if (!actsForPlatform(principal) && holder !== principal.agentId) {
        throw new Conflict(`Task '${id}' is held by '${holder}', not by '${principal.agentId}'`, { assigned_to: holder });
      }
      const status = before.status === IN_PROGRESS ? TODO : before.status;
      const after = await this.store.releaseTask(tx, id, holder, before.status, status, this.now());
      if (!after) throw new Conflict(`Task '${id}' changed while it was being released; read it and try again`);
      const changes: Change[] = [{ action: 'released', from: holder, to: null }];
      if (status !== before.status) changes.push({ action: 'status_changed', from: before.status, to: status });
      await this.activity.record(tx, id, principal.actor, changes);
      return this.updated(tx, after, changes, principal.actor, []);
    });
  }

  // ---- dependencies ----

  async addDependency(taskId: string, dependsOn: string, principal: Principal): Promise<Dependency> {
    const now = this.now();
    return this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'task.add_dependency', resource: { type: 'task', id: taskId } });
      // One dependency insert at a time (PostgreSQL; SQLite serializes writers anyway): the
      // cycle check below then sees every committed edge, so racing inserts cannot close a cycle.
      await this.store.lockGraph(tx);
      // The task depended upon first, then the dependent: the order every path locks in.
      const [upstream] = await this.store.lockTasks(tx, [dependsOn]);
      const [task] = await this.store.lockTasks(tx, [taskId]);
      if (!task) throw new NotFound('Task', taskId);
      if (!upstream) throw new NotFound('Task', dependsOn);
      assertMayChangeTask(principal, task);
      if (taskId === dependsOn) throw new Conflict('A task cannot depend on itself', { cycle: [taskId, taskId] });
      if (await this.store.findDependency(tx, taskId, { dependsOn })) {
        throw new Conflict(`Task '${taskId}' already depends on '${dependsOn}'`);
      }
      const cycle = cycleThrough(await this.store.reachableEdges(tx, dependsOn), taskId, dependsOn);
      if (cycle) throw new Conflict(`The dependency would create a cycle: ${cycle.join(' → ')}`, { cycle });
      const row: DependencyRow = {
        id: newId('dep', now),
        task_id: taskId,
        depends_on: dependsOn,
        created_by: principal.actor,
        created_at: now,
      };
      await this.store.insertDependencies(tx, [row]);
      await this.adjust(tx, isDone(upstream.status) ? [] : [taskId], 1, dependsOn, principal.actor);
      const after = await this.store.updateTask(tx, taskId, {
        updated_at: now,
        depends_on: JSON.stringify([...toTask(task).depends_on, dependsOn]),
      });
      const changes: Change[] = [{ action: 'dependency_added', from: null, to: dependsOn }];
      await this.activity.record(tx, taskId, principal.actor, changes);
      await this.updated(tx, after, changes, principal.actor, []);
      return toDependency(row);
    });
  }

  /** Removes a dependency, named by its id (dep_…) or by the task depended upon (tsk_…). */
  async removeDependency(taskId: string, ref: string, principal: Principal): Promise<string> {
    return this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'task.remove_dependency', resource: { type: 'task', id: taskId } });
      const byTask = ref.startsWith('tsk_');
      const dependency = await this.store.findDependency(tx, taskId, byTask ? { dependsOn: ref } : { id: ref });
      if (!dependency) {
        if (!(await this.store.findTask(tx, taskId))) throw new NotFound('Task', taskId);
        throw new NotFound(`Dependency of task '${taskId}'`, ref);
      }
      const [upstream] = await this.store.lockTasks(tx, [dependency.depends_on]);
      const [task] = await this.store.lockTasks(tx, [taskId]);
      if (task) assertMayChangeTask(principal, task);
      // A concurrent removal (or deletion of either task) may have won the race while this one
      // waited for the locks.
      if (!task || !(await this.store.deleteDependency(tx, dependency.id))) throw new NotFound(`Dependency of task '${taskId}'`, ref);
      const changes: Change[] = [{ action: 'dependency_removed', from: dependency.depends_on, to: null }];
      await this.activity.record(tx, taskId, principal.actor, changes);
      const open = upstream && !isDone(upstream.status) ? [taskId] : [];
      const unblocked = await this.adjust(tx, open, -1, dependency.depends_on, principal.actor);
      const after = await this.store.updateTask(tx, taskId, { updated_at: this.now(), depends_on: without(task, [dependency.depends_on]) });
      await this.updated(tx, after, changes, principal.actor, unblocked);
      return dependency.id;
    });
  }

  async listDependencies(taskId: string): Promise<Dependency[]> {
    await this.requireTask(taskId);
    return (await this.store.listDependencies(autocommit, taskId)).map(toDependency);
  }

  // ---- comments and activity ----

  async addComment(taskId: string, content: string, principal: Principal): Promise<Comment> {
    const now = this.now();
    return this.store.inTransaction(async (tx) => {
      if (!(await this.store.findTask(tx, taskId))) throw new NotFound('Task', taskId);
      const row: CommentRow = { id: newId('cmt', now), task_id: taskId, author: principal.actor, content, created_at: now };
      await this.referencing(() => this.store.insertComment(tx, row), 'Task', taskId);
      await this.activity.record(tx, taskId, principal.actor, [{ action: 'comment_added', from: null, to: row.id }]);
      const comment = toComment(row);
      await this.deps.events.append(tx, {
        type: 'task.commented',
        subject: taskId,
        actor: principal.actor,
        data: { task_id: taskId, comment },
      });
      return comment;
    });
  }

  async listComments(taskId: string, window: Page): Promise<Paged<Comment>> {
    await this.requireTask(taskId);
    const page = await this.store.listComments(autocommit, taskId, window);
    return mapPage(page, toComment);
  }

  async listActivity(taskId: string, window: Page): Promise<Paged<Activity>> {
    await this.requireTask(taskId);
    return this.activity.list(autocommit, taskId, window);
  }

  // ---- internals ----

  private async requireTask(id: string): Promise<void> {
    if (!(await this.store.findTask(autocommit, id))) throw new NotFound('Task', id);
  }

  private async requireProject(tx: Tx, id: string): Promise<void> {
    if (!(await this.store.findProject(tx, id))) throw new NotFound('Project', id);
  }

  /**
   * Runs an insert or update that references a project or task checked a moment earlier: if
   * that row was deleted in between (PostgreSQL; the foreign key catches it), it is a 404.
   */
  private async referencing<T>(work: () => Promise<T>, what: string, id: string | null | undefined): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (this.store.isForeignKeyViolation(err)) throw new NotFound(what, id ?? undefined);
      throw err;
    }
  }

  /**
   * After a change to a task: its task.updated event, after the task.unblocked events the
   * change caused, appended last in the transaction. Returns the task.
   */
  private async updated(tx: Tx, after: TaskRow, changes: Change[], actor: string, unblocked: NewEvent[]): Promise<Task> {
    const task = toTask(after);
    const fields = changes.map((c) => ({ action: c.action, from: c.from, to: c.to }));
    await this.deps.events.append(tx, ...unblocked, { type: 'task.updated', subject: task.id, actor, data: { task, changes: fields } });
    return task;
  }

  /** After a task's status changed: its dependents gain or lose an open dependency (the task.unblocked events). */
  private async statusMoved(tx: Tx, before: string, after: TaskRow, actor: string): Promise<NewEvent[]> {
    if (isDone(before) === isDone(after.status)) return [];
    const dependents = await this.store.dependentsOf(tx, after.id);
    await this.store.lockTasks(tx, dependents);
    return this.adjust(tx, dependents, isDone(after.status) ? -1 : 1, after.id, actor);
  }

  /**
   * Moves the open-dependency count of tasks by `delta`; each task that this takes from 1 to 0
   * is unblocked, and its assignee is told, in this transaction (so exactly once). Returns the
   * task.unblocked events, for the caller to append with its own.
   */
  private async adjust(tx: Tx, ids: string[], delta: number, cause: string, actor: string): Promise<NewEvent[]> {
    const adjusted = await this.store.adjustOpenDependencies(tx, ids, delta);
    if (delta >= 0) return [];
    const events: NewEvent[] = [];
    for (const task of adjusted) if (task.open_dependencies === 0) events.push(await this.unblocked(tx, task, cause, actor));
    return events;
  }

  private async unblocked(tx: Tx, task: AdjustedTask, cause: string, actor: string): Promise<NewEvent> {
    const payload: UnblockedPayload = { task_id: task.id, project_id: task.project_id, title: task.title, unblocked_by: cause };
    if (this.deps.inbox && task.assigned_to !== null) {
      await this.deps.inbox.send({
        tx,
        messages: [{ source: PLATFORM_SENDER, destination: task.assigned_to, event_name: TASK_UNBLOCKED, payload }],
      });
    }
    return { type: 'task.unblocked', subject: task.id, actor, data: { ...payload, assigned_to: task.assigned_to } };
  }

  /**
   * Removes the tasks in `scope` with everything they own. Tasks outside that depended on
   * them lose those dependencies (logged on them) and may become unblocked. Returns how many
   * tasks were removed.
   */
  private async removeTasks(tx: Tx, scope: TaskScope, actor: string): Promise<number> {
    const ids = await this.store.lockScope(tx, scope);
    if (ids.length === 0) return 0;
    const severed = await this.store.edgesIntoScope(tx, scope);
    const dependents = await this.store.lockTasks(tx, [...new Set(severed.map((e) => e.task_id))]);
    const events: NewEvent[] = [];
    for (const { id: task, ...row } of dependents) {
      const edges = severed.filter((e) => e.task_id === task);
      await this.activity.record(
        tx,
        task,
        actor,
        edges.map((e) => ({ action: 'dependency_removed', from: e.depends_on, to: null })),
      );
      for (const edge of edges)
        if (!isDone(edge.depends_on_status)) events.push(...(await this.adjust(tx, [task], -1, edge.depends_on, actor)));
      await this.store.updateTask(tx, task, {
        updated_at: this.now(),
        depends_on: without(
          row,
          edges.map((e) => e.depends_on),
        ),
      });
    }
    const removed = await this.store.deleteScope(tx, scope);
    events.push(...ids.map((id): NewEvent => ({ type: 'task.deleted', subject: id, actor, data: { task_id: id } })));
    await this.deps.events.append(tx, ...events);
    return removed;
  }
}
