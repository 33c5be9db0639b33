import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import type { Item } from '../../../src/client/browser.js';
import { ErrorNotice } from '../errors.js';
import { pageWindow, relativeTime } from '../format.js';
import { useLiveRefresh } from '../live.js';
import { Pager } from '../pager.js';
import { useSession } from '../session.js';
import { AnswerForm, StepContext } from './human-step.js';

export interface ApprovalsSearch {
  page?: number;
}

type PendingApproval = Item<'coordination.listPendingApprovals'>;

const PAGE_SIZE = 10;
// A step starts or stops waiting with these; a run's other changes (cancel, new outputs) too.
const APPROVAL_EVENTS = ['approval.*', 'input.*', 'run.>'];

/** What was last answered here, said once its card has left the list. */
interface Answered {
  stepId: string;
  runId: string;
  outcome: string;
}

/** Every human step waiting across runs, oldest first: approve or reject, or give the data asked for. */
export function ApprovalsView({ search }: { search: ApprovalsSearch }) {
  const { client } = useSession();
  const navigate = useNavigate({ from: '/approvals' });
  const [answered, setAnswered] = useState<Answered | null>(null);
  const offset = ((search.page ?? 1) - 1) * PAGE_SIZE;
  useLiveRefresh({ queryKey: ['approvals'], events: APPROVAL_EVENTS });
  const approvals = useQuery({
    queryKey: ['approvals', 'pending', { offset }],
    queryFn: () => client.coordination.listPendingApprovals.page({ query: { limit: PAGE_SIZE, offset } }),
    placeholderData: keepPreviousData,
  });
  const total = approvals.data?.total ?? 0;
  const span = pageWindow(search.page ?? 1, PAGE_SIZE, total);

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
      ) : total === 0 && !approvals.isError ? (
        <EmptyApprovals />
      ) : (
        <>
          <ol className="approvals">
            {approvals.data?.items.map((approval) => (
              <ApprovalCard key={`${approval.run_id}/${approval.step_id}`} approval={approval} now={approvals.dataUpdatedAt} onAnswered={setAnswered} />
            ))}
          </ol>
          <Pager span={span} total={total} noun="waiting steps" onPage={(page) => void navigate({ search: { page } })} />
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
  const { client } = useSession();
  const queryClient = useQueryClient();
  const path = { run_id: approval.run_id, step_id: approval.step_id };
  // The earlier steps' outputs are the run's: read from it, for this card only.
  const run = useQuery({
    queryKey: ['approvals', 'run', approval.run_id],
    queryFn: () => client.coordination.getRun({ path: { run_id: approval.run_id } }),
  });
  const outputs = run.data && Object.fromEntries(run.data.steps.filter((step) => step.status === 'completed').map((step) => [step.id, step.output]));
  const answer = useMutation({
    mutationFn: (body: { approved: boolean; comment?: string } | { data: Record<string, unknown> }) =>
      'data' in body ? client.coordination.provideInput({ path, body }) : client.coordination.approveStep({ path, body }),
    onSuccess: (_run, body) => {
      onAnswered({ runId: approval.run_id, stepId: approval.step_id, outcome: 'data' in body ? 'Submitted' : body.approved ? 'Approved' : 'Rejected' });
      return queryClient.invalidateQueries({ queryKey: ['approvals'] });
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
      <AnswerForm
        step={approval}
        answering={{
          pending: answer.isPending,
          error: answer.error,
          onDecide: (decision) => answer.mutate(decision),
          onInput: (data) => answer.mutate({ data }),
        }}
      />
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
