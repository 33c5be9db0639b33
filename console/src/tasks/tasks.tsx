import { keepPreviousData, useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useState, type FormEvent } from 'react';
import type { Item } from '../../../src/client/browser.js';
import { ErrorNotice } from '../errors.js';
import { pageWindow, relativeTime } from '../format.js';
import { useLiveRefresh } from '../live.js';
import { Pager } from '../pager.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import { BOARD_STATUSES, parseStatuses, STATUS_PATTERN, statusLabel } from './task-statuses.js';
import { queryKeys } from '../query-keys.js';
import './tasks.css';

export interface ProjectsSearch {
  page?: number;
}

export interface BoardSearch {
  /** Custom statuses shown as columns after the built-in ones. */
  statuses?: string[];
}

type Task = Item<'tasks.list'>;

const PAGE_SIZE = 25;
const COLUMN_PAGE_SIZE = 20;
export const TASK_EVENTS = ['task.*'];
/** Every project, each opening its board. */
export function ProjectsView({ search }: { search: ProjectsSearch }) {
  const { client } = useSession();
  const navigate = useNavigate({ from: '/tasks' });
  const offset = ((search.page ?? 1) - 1) * PAGE_SIZE;
  // No event reports a project's changes: the list is as fresh as its load.
  const projects = useQuery({
    queryKey: queryKeys.tasks.projects({ offset }),
    queryFn: () => client.projects.list.page({ query: { limit: PAGE_SIZE, offset } }),
    placeholderData: keepPreviousData,
  });
  const total = projects.data?.total ?? 0;
  return (
    <section>
      <h1>Tasks</h1>
      <h2>Projects</h2>
      <ErrorNotice error={projects.error} />
      {projects.isPending ? (
        <p className="muted">Loading…</p>
      ) : total === 0 && !projects.isError ? (
        <div className="notice empty">
          <p>
            <strong>No projects yet.</strong> Tasks are grouped in projects, each with a board by status.
          </p>
          <p>
            Create one with <code>POST /core/api/v1/projects</code> (or the SDK's <code>client.projects.create()</code>), then add tasks
            with <code>POST /core/api/v1/tasks</code> and its <code>project_id</code>.
          </p>
        </div>
      ) : (
        <>
          <Table columns={['Project', 'Description', 'Created']}>
            {projects.data?.items.map((project) => (
              <tr key={project.id}>
                <th scope="row">
                  <Link to="/tasks/projects/$projectId" params={{ projectId: project.id }}>
                    {project.name}
                  </Link>
                </th>
                <td>{project.description ?? <span className="muted">—</span>}</td>
                <td>
                  <time dateTime={project.created_at}>{relativeTime(project.created_at, projects.dataUpdatedAt)}</time>
                </td>
              </tr>
            ))}
          </Table>
          <Pager
            span={pageWindow(search.page ?? 1, PAGE_SIZE, total)}
            total={total}
            noun="projects"
            onPage={(page) => void navigate({ search: { page } })}
          />
        </>
      )}
    </section>
  );
}

/** A project's tasks as a board: a column per status, each paging on the server. */
export function BoardView({ projectId, search }: { projectId: string; search: BoardSearch }) {
  const { client } = useSession();
  const navigate = useNavigate({ from: '/tasks/projects/$projectId' });
  useLiveRefresh({ queryKey: queryKeys.tasks.all, events: TASK_EVENTS });
  const project = useQuery({
    queryKey: queryKeys.tasks.project(projectId),
    queryFn: () => client.projects.get({ path: { id: projectId } }),
  });
  const statuses = [...BOARD_STATUSES, ...(search.statuses ?? [])];
  return (
    <section>
      <p>
        <Link to="/tasks">← Projects</Link>
      </p>
      <h1>{project.data?.name ?? 'Project'}</h1>
      {project.data?.description && <p className="muted">{project.data.description}</p>}
      <ErrorNotice error={project.error} />
      <AddColumn onAdd={(status) => void navigate({ search: { statuses: parseStatuses([...(search.statuses ?? []), status]) } })} />
      <div className="board" role="list" aria-label="Board">
        {statuses.map((status) => (
          <BoardColumn key={status} projectId={projectId} status={status} />
        ))}
      </div>
    </section>
  );
}

function BoardColumn({ projectId, status }: { projectId: string; status: string }) {
  const { client } = useSession();
  const tasks = useInfiniteQuery({
    queryKey: queryKeys.tasks.board(projectId, status),
    queryFn: ({ pageParam }) =>
      client.tasks.list.page({ query: { project_id: projectId, status, limit: COLUMN_PAGE_SIZE, offset: pageParam } }),
    initialPageParam: 0,
    getNextPageParam: (last) => (last.offset + last.items.length < last.total ? last.offset + last.items.length : undefined),
  });
  const items = tasks.data?.pages.flatMap((page) => page.items) ?? [];
  const total = tasks.data?.pages.at(-1)?.total ?? 0;
  const headingId = `column-${status}`;
  return (
    <section className="board-column" role="listitem" aria-labelledby={headingId} data-status={status}>
      <h2 id={headingId}>
        {statusLabel(status)} <span className="muted">({total})</span>
      </h2>
      <ErrorNotice error={tasks.error} />
      {tasks.data && total === 0 && <p className="muted">No tasks {statusLabel(status).toLowerCase()}.</p>}
      <ul className="cards">
        {items.map((task) => (
          <TaskCard key={task.id} task={task} />
        ))}
      </ul>
      {tasks.hasNextPage && (
        <button type="button" className="secondary" disabled={tasks.isFetchingNextPage} onClick={() => void tasks.fetchNextPage()}>
          Show more ({total - items.length} left)
        </button>
      )}
    </section>
  );
}

function TaskCard({ task }: { task: Task }) {
  return (
    <li className="task-card" data-task={task.id}>
      <Link to="/tasks/$taskId" params={{ taskId: task.id }}>
        {task.title}
      </Link>
      <TaskBadges task={task} />
    </li>
  );
}

/** What a glance at a task should tell: blocked, its priority, who has it. */
export function TaskBadges({ task }: { task: Task }) {
  return (
    <ul className="chips">
      {task.blocked && <li className="health-unhealthy">blocked</li>}
      {task.priority !== 'none' && <li className={`priority-${task.priority}`}>{task.priority}</li>}
      {task.assigned_to && <li>{task.assigned_to}</li>}
    </ul>
  );
}

/** Custom statuses are free slugs the board cannot list: a column is added for one by name. */
function AddColumn({ onAdd }: { onAdd(status: string): void }) {
  const [status, setStatus] = useState('');
  const valid = STATUS_PATTERN.test(status.trim());
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!valid) return;
    onAdd(status.trim());
    setStatus('');
  };
  return (
    <form className="filters" onSubmit={submit}>
      <label>
        Custom status
        <input value={status} onChange={(event) => setStatus(event.target.value)} placeholder="review" pattern="[a-z][a-z0-9_\-]{0,63}" />
      </label>
      <button type="submit" className="secondary" disabled={!valid}>
        Add a column
      </button>
    </form>
  );
}
