import { keepPreviousData, useMutation, useQueries, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useId, useState, type FormEvent } from 'react';
import { ErrorNotice } from '../errors.js';
import { Fact } from '../facts.js';
import { relativeTime } from '../format.js';
import { useLiveRefresh } from '../live.js';
import { usePageParam } from '../page-param.js';
import { Pager } from '../pager.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import { statusLabel } from './task-statuses.js';
import { TASK_EVENTS, TaskBadges } from './tasks.js';
import { queryKeys } from '../query-keys.js';
import './tasks.css';

/** Pages of the task's comments and activity, in the URL. */
export interface TaskSearch {
  comments?: number;
  activity?: number;
}

const PAGE_SIZE = 20;

/** One task: its fields, what it depends on, its comments (with a form to add one) and its activity. */
export function TaskDetailView({ taskId }: { taskId: string }) {
  const { client } = useSession();
  useLiveRefresh({ queryKey: queryKeys.tasks.all, events: TASK_EVENTS });
  const task = useQuery({ queryKey: queryKeys.tasks.detail(taskId), queryFn: () => client.tasks.get({ path: { id: taskId } }) });
  const data = task.data;
  return (
    <section className="task-detail">
      <p>
        {data?.project_id ? (
          <Link to="/tasks/projects/$projectId" params={{ projectId: data.project_id }}>
            ← Board
          </Link>
        ) : (
          <Link to="/tasks">← Projects</Link>
        )}
      </p>
      <h1>{data?.title ?? 'Task'}</h1>
      <ErrorNotice error={task.error} />
      {data && (
        <>
          <dl className="facts">
            <Fact label="Status">
              <span className="badge" data-testid="task-status">
                {statusLabel(data.status)}
              </span>
            </Fact>
            <Fact label="Created">
              {data.created_by}, <time dateTime={data.created_at}>{relativeTime(data.created_at, task.dataUpdatedAt)}</time>
            </Fact>
            <Fact label="Updated">
              <time dateTime={data.updated_at}>{relativeTime(data.updated_at, task.dataUpdatedAt)}</time>
            </Fact>
          </dl>
          <TaskBadges task={data} />
          {data.description && <p className="task-description">{data.description}</p>}
          <Dependencies taskId={taskId} />
          <Comments taskId={taskId} />
          <ActivityLog taskId={taskId} />
        </>
      )}
    </section>
  );
}

function Dependencies({ taskId }: { taskId: string }) {
  const { client } = useSession();
  const dependencies = useQuery({
    queryKey: queryKeys.tasks.dependencies(taskId),
    queryFn: () => client.tasks.listDependencies({ path: { id: taskId } }),
  });
  // Each task depended upon, for its title and status (a task has at most 100 dependencies).
  const upstream = useQueries({
    queries: (dependencies.data ?? []).map((dependency) => ({
      queryKey: queryKeys.tasks.detail(dependency.depends_on),
      queryFn: () => client.tasks.get({ path: { id: dependency.depends_on } }),
    })),
  });
  return (
    <section aria-labelledby="task-dependencies">
      <h2 id="task-dependencies">Depends on</h2>
      <ErrorNotice error={dependencies.error} />
      {dependencies.data?.length === 0 ? (
        <p className="muted">
          No dependencies. Add one with <code>POST /core/api/v1/tasks/{taskId}/dependencies</code>: the task stays blocked until those it
          depends on are done.
        </p>
      ) : (
        <ul className="dependencies">
          {dependencies.data?.map((dependency, index) => {
            const other = upstream[index]?.data;
            return (
              <li key={dependency.id} data-dependency={dependency.depends_on}>
                <Link to="/tasks/$taskId" params={{ taskId: dependency.depends_on }}>
                  {other?.title ?? dependency.depends_on}
                </Link>{' '}
                {other && <span className="badge">{statusLabel(other.status)}</span>}
              </li>
            );
          })}
        </ul>
      )}
    </section>
  );
}

function Comments({ taskId }: { taskId: string }) {
  const { client } = useSession();
  const paging = usePageParam('comments', PAGE_SIZE);
  const comments = useQuery({
    queryKey: queryKeys.tasks.comments(taskId, paging.offset),
    queryFn: () => client.tasks.listComments.page({ path: { id: taskId }, query: { limit: PAGE_SIZE, offset: paging.offset } }),
    placeholderData: keepPreviousData,
  });
  const total = comments.data?.total ?? 0;
  return (
    <section aria-labelledby="task-comments">
      <h2 id="task-comments">
        Comments <span className="muted">({total})</span>
      </h2>
      <ErrorNotice error={comments.error} />
      {comments.data && total === 0 && <p className="muted">No comments yet: write the first below.</p>}
      <ol className="comments">
        {comments.data?.items.map((comment) => (
          <li key={comment.id} data-comment={comment.id}>
            <p className="muted">
              <strong>{comment.author}</strong>{' '}
              <time dateTime={comment.created_at}>{relativeTime(comment.created_at, comments.dataUpdatedAt)}</time>
            </p>
            <p className="comment-content">{comment.content}</p>
          </li>
        ))}
      </ol>
      <Pager span={paging.span(total)} total={total} noun="comments" onPage={paging.onPage} />
      <CommentForm taskId={taskId} />
    </section>
  );
}

function CommentForm({ taskId }: { taskId: string }) {
  const { client, can } = useSession();
  const queryClient = useQueryClient();
  const id = useId();
  const [content, setContent] = useState('');
  const add = useMutation({
    mutationFn: () => client.tasks.addComment({ path: { id: taskId }, body: { content } }),
    onSuccess: () => {
      setContent('');
      void queryClient.invalidateQueries({ queryKey: queryKeys.tasks.detail(taskId) });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    add.mutate();
  };
  if (!can('tasks:write')) return null;
  return (
    <form className="card comment-form" onSubmit={submit}>
      <label htmlFor={id}>Add a comment</label>
      <textarea id={id} value={content} onChange={(event) => setContent(event.target.value)} rows={3} required />
      <ErrorNotice error={add.error} />
      <button type="submit" disabled={add.isPending || content.trim() === ''}>
        Comment
      </button>
    </form>
  );
}

function ActivityLog({ taskId }: { taskId: string }) {
  const { client } = useSession();
  const paging = usePageParam('activity', PAGE_SIZE);
  const activity = useQuery({
    queryKey: queryKeys.tasks.activity(taskId, paging.offset),
    queryFn: () => client.tasks.listActivity.page({ path: { id: taskId }, query: { limit: PAGE_SIZE, offset: paging.offset } }),
    placeholderData: keepPreviousData,
  });
  const total = activity.data?.total ?? 0;
  return (
    <section aria-labelledby="task-activity">
      <h2 id="task-activity">Activity</h2>
      <ErrorNotice error={activity.error} />
      <Table columns={['When', 'Who', 'What', 'From', 'To']}>
        {activity.data?.items.map((entry) => (
          <tr key={entry.id}>
            <td>
              <time dateTime={entry.created_at} title={entry.created_at}>
                {relativeTime(entry.created_at, activity.dataUpdatedAt)}
              </time>
            </td>
            <td>
              <code>{entry.actor}</code>
            </td>
            <td>{entry.action.replace(/_/g, ' ')}</td>
            <td>{entry.from ?? <span className="muted">—</span>}</td>
            <td>{entry.to ?? <span className="muted">—</span>}</td>
          </tr>
        ))}
      </Table>
      <Pager span={paging.span(total)} total={total} noun="entries" onPage={paging.onPage} />
    </section>
  );
}
