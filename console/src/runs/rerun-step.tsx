import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { ErrorNotice } from '../errors.js';
import { queryKeys } from '../query-keys.js';
import { useSession } from '../session.js';
import { parseRunInput } from './run-input.js';
import type { Run } from './runs.js';

type RunStep = Run['steps'][number];

const FINISHED = new Set(['completed', 'failed', 'cancelled']);

/** Whether a run can be rerun from its steps: finished, and not a sub_plan's run (its parent is rerun instead). */
export function rerunnable(run: Run): boolean {
  return FINISHED.has(run.status) && run.parent_run_id === null;
}

const pretty = (value: unknown) => JSON.stringify(value ?? {}, null, 2);
// An agent step's input can be given anew; other steps compute theirs from the plan.
const editsStepInput = (step: RunStep) => step.type === 'agent' && step.input !== null && typeof step.input === 'object';

/** "Rerun from here" on one step of a finished run: opens the rerun dialog. */
export function RerunFromStep({ run, step }: { run: Run; step: RunStep }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" className="secondary rerun-from" onClick={() => setOpen(true)} aria-label={`Rerun from ${step.id}`}>
        Rerun from here
      </button>
      {open && <RerunDialog run={run} step={step} onClose={() => setOpen(false)} />}
    </>
  );
}

/**
 * A new run of `run` from `step`: the run's input and (for an agent step) the step's input as
 * JSON, prefilled with what the run had, and the plan version to follow. Only what was edited is
 * sent, so an unchanged step input is still computed from the (maybe edited) run input. Opens the new run.
 */
function RerunDialog({ run, step, onClose }: { run: Run; step: RunStep; onClose(): void }) {
  const { client } = useSession();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const id = useId();
  const dialog = useRef<HTMLDialogElement>(null);
  const [runInput] = useState(() => pretty(run.input));
  const [stepInput] = useState(() => pretty(step.input));
  const [inputText, setInputText] = useState(runInput);
  const [stepText, setStepText] = useState(stepInput);
  const [version, setVersion] = useState<'same' | 'latest'>('same');
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    const element = dialog.current;
    if (element && !element.open) element.showModal();
  }, []);
  const rerun = useMutation({
    mutationFn: (body: Parameters<typeof client.coordination.rerunRun>[0]['body']) =>
      client.coordination.rerunRun({ path: { run_id: run.id }, body }),
    onSuccess: (created) => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.runs.all });
      void navigate({ to: '/runs/$runId', params: { runId: created.id } });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const input = parseRunInput(inputText);
    if ('problem' in input) return setProblem(`Run input: ${input.problem}`);
    const edited = editsStepInput(step) ? parseRunInput(stepText) : null;
    if (edited && 'problem' in edited) return setProblem(`Input of ${step.id}: ${edited.problem}`);
    setProblem(null);
    rerun.mutate({
      from_step: step.id,
      plan_version: version,
      ...(JSON.stringify(input.input) !== JSON.stringify(run.input) ? { input: input.input } : {}),
      ...(edited && JSON.stringify(edited.input) !== JSON.stringify(step.input) ? { step_inputs: { [step.id]: edited.input } } : {}),
    });
  };
  const rows = (text: string) => Math.min(12, Math.max(3, text.split('\n').length + 1));
  return (
    <dialog ref={dialog} className="card rerun-dialog" aria-labelledby={`${id}-title`} onClose={onClose}>
      <form onSubmit={submit}>
        <h2 id={`${id}-title`}>Rerun from {step.id}</h2>
        <p className="muted">
          A new run: the steps before <code>{step.id}</code> keep their outputs, and <code>{step.id}</code> and everything after it run
          again.
        </p>
        <label>
          Run input (a JSON object)
          <textarea value={inputText} onChange={(event) => setInputText(event.target.value)} rows={rows(inputText)} spellCheck={false} />
        </label>
        {editsStepInput(step) && (
          <label>
            Input of {step.id} (a JSON object)
            <textarea value={stepText} onChange={(event) => setStepText(event.target.value)} rows={rows(stepText)} spellCheck={false} />
          </label>
        )}
        <fieldset>
          <legend>Plan version</legend>
          <label className="inline">
            <input type="radio" name={`${id}-version`} checked={version === 'same'} onChange={() => setVersion('same')} />
            This run&apos;s (version {run.plan_version})
          </label>
          <label className="inline">
            <input type="radio" name={`${id}-version`} checked={version === 'latest'} onChange={() => setVersion('latest')} />
            The plan&apos;s latest
          </label>
        </fieldset>
        {problem && (
          <p role="alert" className="field-problem">
            {problem}
          </p>
        )}
        <ErrorNotice error={rerun.error} />
        <div className="buttons">
          <button type="submit" disabled={rerun.isPending}>
            Rerun
          </button>
          <button type="button" className="secondary" onClick={() => dialog.current?.close()}>
            Cancel
          </button>
        </div>
      </form>
    </dialog>
  );
}
