import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import type { Item } from '../../../src/client/browser.js';
import { ErrorNotice } from '../errors.js';
import { pageWindow, relativeTime } from '../format.js';
import { useLiveRefresh } from '../live.js';
import { Pager } from '../pager.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import { queryKeys } from '../query-keys.js';

type DeadLetter = Item<'messaging.listDeadLetters'>;

export interface DeadLettersSearch {
  page?: number;
}

const PAGE_SIZE = 25;
const LETTER_EVENTS = ['message.*', 'run.*'];

/** The run and step a plan step's letter was sent for (its origin ref is `run_id|step_id|attempt`). */
function planStepOf(letter: DeadLetter): { runId: string; stepId: string } | null {
  if (letter.origin?.kind !== 'plan_step') return null;
  const [runId, stepId] = letter.origin.ref.split('|');
  return runId && stepId ? { runId, stepId } : null;
}

/** Every agent's dead letters in one list, each with the work it belongs to and the redrive that fits it. */
export function DeadLettersView({ search }: { search: DeadLettersSearch }) {
  const { client } = useSession();
  const navigate = useNavigate({ from: '/dead-letters' });
  const offset = ((search.page ?? 1) - 1) * PAGE_SIZE;
  useLiveRefresh({ queryKey: queryKeys.deadLetters.all, events: LETTER_EVENTS });
  const letters = useQuery({
    queryKey: queryKeys.deadLetters.list({ offset }),
    queryFn: () => client.messaging.listDeadLetters.page({ query: { limit: PAGE_SIZE, offset } }),
    placeholderData: keepPreviousData,
  });
  const total = letters.data?.total ?? 0;
  const span = pageWindow(search.page ?? 1, PAGE_SIZE, total);
  return (
    <section>
      <h1>Dead letters</h1>
      <p className="muted">
        Messages no agent will receive again (rejected without requeue, or out of deliveries). A plan step’s letter is redriven with its
        run, so the run picks the step up again; any other is put back in its agent’s inbox as a new message.
      </p>
      <ErrorNotice error={letters.error} />
      {letters.isPending ? (
        <p className="muted">Loading…</p>
      ) : total === 0 && !letters.isError ? (
        <p className="notice empty">No dead letters.</p>
      ) : (
        <>
          <Table columns={['Message', 'Agent', 'Reason', 'Dead', 'Deliveries', 'Work', { label: 'Actions', visuallyHidden: true }]}>
            {letters.data?.items.map((letter) => (
              <LetterRow key={letter.message_id} letter={letter} now={letters.dataUpdatedAt} />
            ))}
          </Table>
          <Pager
            span={span}
            total={total}
            estimated={letters.data?.totalEstimated}
            noun="dead letters"
            onPage={(page) => void navigate({ search: { page } })}
          />
        </>
      )}
    </section>
  );
}

function LetterRow({ letter, now }: { letter: DeadLetter; now: number }) {
  const { client, can } = useSession();
  const queryClient = useQueryClient();
  const step = planStepOf(letter);
  const redrive = useMutation({
    mutationFn: async () => {
      if (step) await client.coordination.redriveRun({ path: { run_id: step.runId } });
      else await client.messaging.redriveDeadLetter({ path: { message_id: letter.message_id } });
    },
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.deadLetters.all }),
  });
  const allowed = step ? can('runs:write') : can('messaging:write');
  return (
    <tr data-letter={letter.message_id}>
      <th scope="row">
        <code>{letter.event_name}</code>
        <div className="muted">
          <code>{letter.message_id}</code>
        </div>
      </th>
      <td>
        <Link to="/agents/$agentId" params={{ agentId: letter.destination }}>
          {letter.destination}
        </Link>
      </td>
      <td>{letter.reason ?? <span className="muted">—</span>}</td>
      <td>{relativeTime(letter.dead_at, now)}</td>
      <td>{letter.attempts.length}</td>
      <td>
        {step ? (
          <>
            step <code>{step.stepId}</code> of{' '}
            <Link to="/runs/$runId" params={{ runId: step.runId }}>
              {step.runId}
            </Link>
          </>
        ) : letter.origin ? (
          <code>{letter.origin.kind}</code>
        ) : (
          <span className="muted">—</span>
        )}
      </td>
      <td className="actions">
        {allowed && (
          <button type="button" className="secondary" disabled={redrive.isPending || redrive.isSuccess} onClick={() => redrive.mutate()}>
            {step ? 'Redrive the run' : 'Redrive'}
          </button>
        )}
        <ErrorNotice error={redrive.error} />
      </td>
    </tr>
  );
}
