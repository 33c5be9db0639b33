import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import type { Item } from '../../../src/client/browser.js';
import { ErrorNotice } from '../errors.js';
import { pageWindow, relativeTime } from '../format.js';
import { useLiveRefresh } from '../live.js';
import { Pager } from '../pager.js';
import { mayDecide, namesMe } from './approvers.js';
import { useSession } from '../session.js';
import { AnswerForm, StepContext } from './human-step.js';
import { queryKeys } from '../query-keys.js';

export interface ApprovalsSearch {
  page?: number;
}

type PendingApproval = Item<'coordination.listPendingApprovals'>;

const PAGE_SIZE = 10;
/** The inbox reads every waiting step (to put those naming the principal apart); past this many it says it shows the oldest. */
const READ_AT_MOST = 1000;
// A step starts or stops waiting with these; a run's other changes (cancel, new outputs) too.
const APPROVAL_EVENTS = ['approval.*', 'input.*', 'run.>'];

/** What was last answered here, said once its card has left the list. */
interface Answered {
  stepId: string;
  runId: string;
  outcome: string;
}

async function readWaiting(list: AsyncIterable<PendingApproval>): Promise<PendingApproval[]> {
  const steps: PendingApproval[] = [];
  for await (const step of list) {
    steps.push(step);
    if (steps.length === READ_AT_MOST) break;
  }
  return steps;
}

/**
 * Every human step waiting across runs, oldest first: "Waiting for you" (the steps whose
 * approvers name the principal or its role) apart from the others. Each card offers its form
 * only when the server would take the principal's answer.
 */
export function ApprovalsView({ search }: { search: ApprovalsSearch }) {
  const { client, whoami } = useSession();
  const navigate = useNavigate({ from: '/approvals' });
  const [answered, setAnswered] = useState<Answered | null>(null);
  useLiveRefresh({ queryKey: queryKeys.approvals.all, events: APPROVAL_EVENTS });
  const approvals = useQuery({
    queryKey: queryKeys.approvals.pending(),
    queryFn: () => readWaiting(client.coordination.listPendingApprovals.all({ query: { limit: 100 } })),
    placeholderData: keepPreviousData,
  });
  const all = approvals.data ?? [];
  const mine = all.filter((step) => namesMe(step.approvers, whoami));
  const others = all.filter((step) => !namesMe(step.approvers, whoami));
  const span = pageWindow(search.page ?? 1, PAGE_SIZE, others.length);
  const card = (approval: PendingApproval) => (
    <ApprovalCard
      key={`${approval.run_id}/${approval.step_id}`}
      approval={approval}
      now={approvals.dataUpdatedAt}
      onAnswered={setAnswered}
    />
  );

  return (
    <section>
      <h1>Approvals</h1>
      {answered && (
        <p className="notice success" role="status">
          {answered.outcome}: step <code>{answered.stepId}</code> of run <code>{answered.runId}</code>.
        </p>
      )}
      <ErrorNotice error={approvals.error} />
      {approvals.isPending ? (
        <p className="muted">Loading…</p>
      ) : all.length === 0 && !approvals.isError ? (
        <EmptyApprovals />
      ) : (
        <>
          {all.length === READ_AT_MOST && <p className="notice">Showing the oldest {READ_AT_MOST} waiting steps.</p>}
          <section className="approvals-section" aria-labelledby="waiting-for-you" data-list="mine">
            <h2 id="waiting-for-you">
              Waiting for you <span className="muted">({mine.length})</span>
            </h2>
            {mine.length === 0 ? (
              <p className="muted">
                No waiting step names you ({whoami.kind === 'user' ? `user:${whoami.username}` : (whoami.agent_id ?? 'this key')}) or your
                role (role:{whoami.role}).
              </p>
            ) : (
              <ol className="approvals">{mine.map(card)}</ol>
            )}
          </section>
          <section className="approvals-section" aria-labelledby="waiting-others" data-list="others">
            <h2 id="waiting-others">
              All other waiting steps <span className="muted">({others.length})</span>
            </h2>
            <ol className="approvals">{others.slice(span.offset, span.offset + PAGE_SIZE).map(card)}</ol>
            <Pager span={span} total={others.length} noun="waiting steps" onPage={(page) => void navigate({ search: { page } })} />
          </section>
        </>
      )}
    </section>
  );
}

interface ApprovalCardProps {
  approval: PendingApproval;
  /** When the list was read (ms), for its relative times. */
  now: number;
  onAnswered(answered: Answered): void;
}

function ApprovalCard({ approval, now, onAnswered }: ApprovalCardProps) {
  const { client, whoami } = useSession();
  const queryClient = useQueryClient();
  const path = { run_id: approval.run_id, step_id: approval.step_id };
  // The earlier steps' outputs are the run's: read from it, for this card only.
  const run = useQuery({
    queryKey: queryKeys.approvals.run(approval.run_id),
    queryFn: () => client.coordination.getRun({ path: { run_id: approval.run_id } }),
  });
  const outputs =
    run.data && Object.fromEntries(run.data.steps.filter((step) => step.status === 'completed').map((step) => [step.id, step.output]));
  const answer = useMutation({
    mutationFn: (body: { approved: boolean; comment?: string } | { data: Record<string, unknown> }) =>
      'data' in body ? client.coordination.provideInput({ path, body }) : client.coordination.approveStep({ path, body }),
    onSuccess: (_run, body) => {
      onAnswered({
        runId: approval.run_id,
        stepId: approval.step_id,
        outcome: 'data' in body ? 'Submitted' : body.approved ? 'Approved' : 'Rejected',
      });
      return queryClient.invalidateQueries({ queryKey: queryKeys.approvals.all });
    },
  });
  const headingId = `approval-${approval.run_id}-${approval.step_id}`;
  return (
    <li className="card approval" aria-labelledby={headingId} data-run={approval.run_id} data-step={approval.step_id}>
      <h2 id={headingId}>
        {approval.type === 'human_approval' ? 'Approve' : 'Input'}: <code>{approval.step_id}</code>
      </h2>
      <p className="muted waiting">
        Waiting since{' '}
        <time dateTime={approval.waiting_since ?? undefined} title={approval.waiting_since ?? undefined}>
          {relativeTime(approval.waiting_since, now)}
        </time>
        {approval.expires_at && (
          <>
            {' · times out '}
            <time dateTime={approval.expires_at} title={approval.expires_at}>
              {relativeTime(approval.expires_at, now)}
            </time>
          </>
        )}
        {approval.approvers.length > 0 && <> · may be decided by {approval.approvers.join(', ')} (or an admin)</>}
      </p>
      <StepContext step={approval} outputs={outputs} open={false} />
      <ErrorNotice error={run.error} />
      {mayDecide(approval.approvers, whoami) ? (
        <AnswerForm
          step={approval}
          answering={{
            pending: answer.isPending,
            error: answer.error,
            onDecide: (decision) => answer.mutate(decision),
            onInput: (data) => answer.mutate({ data }),
          }}
        />
      ) : (
        <p className="muted not-yours">
          {approval.approvers.length > 0 && whoami.permissions.includes('approvals:decide')
            ? `Only ${approval.approvers.join(', ')} (or an admin) may decide this step.`
            : 'Deciding human steps needs the approvals:decide permission (the approver, operator or admin role).'}
        </p>
      )}
    </li>
  );
}

function EmptyApprovals() {
  return (
    <div className="notice empty">
      <p>
        <strong>Nothing waits for a person.</strong> A run shows up here when it reaches a <code>human_approval</code> or{' '}
        <code>human_input</code> step.
      </p>
      <ol>
        <li>
          Add such a step to a plan (see <Link to="/plans">Plans</Link>), e.g.{' '}
          <code>{'{"id": "gate", "type": "human_approval", "prompt": "Ship it?"}'}</code>.
        </li>
        <li>
          Start a run of it (<Link to="/runs">Runs</Link>, or <code>POST /api/v1/coordination/runs</code>): it waits here, and its{' '}
          <code>approval.requested</code> event carries a link to decide without signing in.
        </li>
      </ol>
    </div>
  );
}
