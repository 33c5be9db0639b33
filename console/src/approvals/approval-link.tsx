import { useMutation, useQuery } from '@tanstack/react-query';
import { Switchboard, SwitchboardError, type Body, type Result } from '../../../src/client/browser.js';
import { ErrorNotice } from '../errors.js';
import { linkRefusal, type LinkRefusal } from './link-refusal.js';
import { AnswerForm, StepContext } from './human-step.js';
import { queryKeys } from '../query-keys.js';

// No key: the token authenticates. The browser's session cookie goes along (same origin), so the
// page can tell who is signed in; the link's decision does not use it.
const anonymous = new Switchboard({ url: window.location.origin });
const USER = 'user:';

const refusalOf = (error: unknown): LinkRefusal | null =>
  error instanceof SwitchboardError ? linkRefusal({ status: error.status, message: error.message, details: error.details }) : null;

/**
 * An approval link's page, outside the sign-in: it shows the prompt, the run's context and the
 * form. Opening it decides nothing (mail scanners prefetch links); its button posts the decision,
 * once, as the one the link was made for. The event log's link names no one: it points at the
 * step, and a signed-in person decides in the console.
 */
export function ApprovalLinkPage({ token }: { token: string }) {
  const linked = useQuery({
    queryKey: queryKeys.approvalLink(token),
    queryFn: () => anonymous.coordination.getApprovalLink({ path: { token } }),
    // What the link asks changes only by deciding, which this page does itself.
    staleTime: Infinity,
  });
  const forUser = linked.data?.approver?.startsWith(USER) ?? false;
  // A browser signed in as someone else must not decide as the link's person unawares.
  const session = useQuery({
    queryKey: queryKeys.approvalLinkViewer,
    queryFn: () =>
      anonymous.auth.currentSession().then(
        (current) => current.principal,
        () => null,
      ),
    enabled: forUser,
    staleTime: Infinity,
  });
  const decide = useMutation({
    mutationFn: (body: Body<'coordination.decideByLink'>) => anonymous.coordination.decideByLink({ path: { token }, body }),
  });
  const refusal = refusalOf(decide.error) ?? refusalOf(linked.error);
  const step = linked.data;
  const signedInAs = session.data?.username ?? null;
  const otherPerson = forUser && signedInAs !== null && `${USER}${signedInAs}` !== step?.approver;

  return (
    <main className="public-page" id="content">
      <p className="brand">Switchboard</p>
      {refusal ? (
        <Refusal refusal={refusal} />
      ) : linked.isPending || (forUser && session.isPending) ? (
        <p className="muted">Loading…</p>
      ) : !step ? (
        <ErrorNotice error={linked.error} />
      ) : (
        <section className="card approval">
          <h1>{step.type === 'human_approval' ? 'Approval requested' : 'Input requested'}</h1>
          {step.approver === null ? (
            <p className="muted">This link shows the step but decides nothing by itself: a person who may decide signs in to do so.</p>
          ) : (
            <p className="muted">
              This link decides as <strong>{nameOf(step.approver)}</strong>. It can be used once, until{' '}
              <time dateTime={step.expires_at}>{new Date(step.expires_at).toLocaleString()}</time>.
            </p>
          )}
          <StepContext step={step} outputs={step.outputs} open />
          {step.approver === null ? (
            <p>
              <a className="button" href="/console/approvals">
                Decide in the console
              </a>
            </p>
          ) : otherPerson ? (
            <p className="notice" role="status">
              You are signed in as <strong>{signedInAs}</strong>, but this link decides as <strong>{nameOf(step.approver)}</strong>: it is
              not yours to use. <a href="/console/approvals">Decide in the console as yourself</a> if the step names you.
            </p>
          ) : decide.data ? (
            <Decided decision={decide.data} by={nameOf(step.approver)} input={step.type === 'human_input'} />
          ) : (
            <AnswerForm
              step={step}
              answering={{
                pending: decide.isPending,
                error: decide.error,
                onDecide: (decision) => decide.mutate(decision),
                onInput: (data) => decide.mutate({ data }),
              }}
            />
          )}
        </section>
      )}
    </main>
  );
}

/** Who a link decides as, as a person reads it: a username, or an agent id. */
const nameOf = (approver: string) => (approver.startsWith(USER) ? approver.slice(USER.length) : approver);

function Decided({ decision, by, input }: { decision: Result<'coordination.decideByLink'>; by: string; input: boolean }) {
  const outcome = input ? 'Submitted' : decision.status === 'completed' ? 'Approved' : 'Rejected';
  return (
    <div className="notice success" role="status">
      <p>
        <strong>{outcome}</strong>, as {by} at <time dateTime={decision.decided_at}>{new Date(decision.decided_at).toLocaleString()}</time>.
      </p>
      <p>The run goes on; this link cannot be used again. You may close this page.</p>
    </div>
  );
}

const REFUSALS: Record<Exclude<LinkRefusal['kind'], 'decided'>, { title: string; next: string }> = {
  not_found: { title: 'Approval link not found', next: 'Check that the whole link was copied: it works only on the server that sent it.' },
  expired: { title: 'This link has expired', next: 'Someone with access to the console can still decide the step in its approvals inbox.' },
  cancelled: { title: 'The run was cancelled', next: 'Nothing is left to decide.' },
  superseded: { title: 'This link is out of date', next: 'The step asks again: use the newest link sent for it.' },
  closed: { title: 'This step no longer waits', next: 'Nothing is left to decide through this link.' },
};

function Refusal({ refusal }: { refusal: LinkRefusal }) {
  if (refusal.kind === 'decided') {
    return (
      <section className="notice" role="status">
        <h1>Already decided</h1>
        <p>
          Already decided by <strong>{refusal.by}</strong> at <time dateTime={refusal.at}>{new Date(refusal.at).toLocaleString()}</time>.
        </p>
        <p className="muted">A link decides its step once.</p>
      </section>
    );
  }
  const { title, next } = REFUSALS[refusal.kind];
  return (
    <section className="notice" role="status">
      <h1>{title}</h1>
      <p>{refusal.message}.</p>
      <p className="muted">{next}</p>
    </section>
  );
}
