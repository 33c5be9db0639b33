import { assertMayChange, type Principal } from '../auth/index.js';
import { autocommit, type Tx } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import type { AuditTrail } from '../kernel/ports.js';
import type { Project, ProjectBody } from './schemas.js';
import type { ProjectRow, TaskScope, TasksStore } from './store.js';

function toProject(row: ProjectRow): Project {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    created_by: row.created_by,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/**
 * Projects: the containers tasks are filed under. Their creator (or one acting for the
 * platform) changes them; one that holds tasks is deleted only with `cascade`, which removes
 * its tasks by the tasks' own rule (dependents lose their dependencies and may be unblocked).
 */
export class Projects {
  constructor(
    private readonly deps: {
      store: TasksStore;
      clock: Clock;
      audit: AuditTrail;
      /** Removes the tasks in a scope with everything they own (TasksService.removeTasks); returns how many. */
      removeTasks: (tx: Tx, scope: TaskScope, actor: string) => Promise<number>;
    },
  ) {}

  private get store(): TasksStore {
    return this.deps.store;
  }

  async create(input: ProjectBody, principal: Principal): Promise<Project> {
    const now = this.deps.clock.now();
    const row: ProjectRow = {
      id: newId('prj', now),
      name: input.name,
      description: input.description ?? null,
      created_by: principal.actor,
      created_at: now,
      updated_at: now,
    };
    await this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'project.create', resource: { type: 'project', id: row.id } });
      await this.store.insertProject(tx, row);
    });
    return toProject(row);
  }

  async get(id: string): Promise<Project> {
    const row = await this.store.findProject(autocommit, id);
    if (!row) throw new NotFound('Project', id);
    return toProject(row);
  }

  async list(window: Page): Promise<Paged<Project>> {
    const page = await this.store.listProjects(autocommit, window);
    return mapPage(page, toProject);
  }

  /** PUT: replaces name and description (an absent description clears it). */
  async replace(id: string, input: ProjectBody, principal: Principal): Promise<Project> {
    return this.store.inTransaction(async (tx) => {
      await this.changeableProject(tx, id, principal);
      await this.deps.audit.record(tx, { action: 'project.update', resource: { type: 'project', id } });
      const row = await this.store.updateProject(tx, id, {
        name: input.name,
        description: input.description ?? null,
        updated_at: this.deps.clock.now(),
      });
      if (!row) throw new NotFound('Project', id);
      return toProject(row);
    });
  }

  /** Deletes a project; one with tasks only with `cascade`, which removes them (and all theirs) too. */
  async delete(id: string, principal: Principal, options: { cascade?: boolean } = {}): Promise<void> {
    await this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'project.delete', resource: { type: 'project', id } });
      // The lock keeps tasks from being added to the project while it goes.
      await this.changeableProject(tx, id, principal, { lock: true });
      const count = await this.store.countProjectTasks(tx, id);
      if (count > 0) {
        if (!options.cascade) {
          throw new Conflict(`Project '${id}' has ${count} task(s); delete them first or pass cascade=true`, { tasks: count });
        }
        await this.deps.removeTasks(tx, { projectId: id }, principal.actor);
      }
      await this.store.deleteProject(tx, id);
    });
  }

  /** 404 unknown; 403 unless `principal` created the project or acts for the platform. */
  private async changeableProject(tx: Tx, id: string, principal: Principal, options: { lock?: boolean } = {}): Promise<void> {
    const row = await this.store.findProject(tx, id, options);
    if (!row) throw new NotFound('Project', id);
    assertMayChange(principal, { type: 'project', id, createdBy: row.created_by });
  }
}
