import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useId, useState, type FormEvent } from 'react';
import type { Item } from '../../../src/client/browser.js';
import { ErrorNotice } from '../errors.js';
import { inputTemplate, parseRunInput } from './run-input.js';
import { useSession } from '../session.js';
import { queryKeys } from '../query-keys.js';

export type Plan = Item<'coordination.listPlans'>;

/**
 * Starts a run of a plan's current version with an input typed as JSON (a plan declares no input
 * schema to generate a form from): a JSON mistake is shown here, the server's refusal (a bad
 * template, a missing plan) with its message and request id. Opens the new run.
 */
export function StartRunForm({ plan }: { plan: Plan }) {
  const { client } = useSession();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const id = useId();
  const [text, setText] = useState(() => inputTemplate(plan.steps));
  const [problem, setProblem] = useState<string | null>(null);
  const start = useMutation({
    mutationFn: (input: Record<string, unknown>) => client.coordination.startRun({ body: { plan_id: plan.id, input } }),
    onSuccess: (run) => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.runs.all });
      void navigate({ to: '/runs/$runId', params: { runId: run.id } });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const parsed = parseRunInput(text);
    setProblem('problem' in parsed ? parsed.problem : null);
    if ('input' in parsed) start.mutate(parsed.input);
  };
  return (
    <form className="card start-run" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Start a run of {plan.alias}</h2>
      <label>
        Input (a JSON object)
        <textarea
          value={text}
          onChange={(event) => setText(event.target.value)}
          rows={Math.min(12, Math.max(3, text.split('\n').length + 1))}
          spellCheck={false}
          aria-invalid={problem !== null}
          aria-describedby={problem ? `${id}-problem` : undefined}
        />
      </label>
      {problem && (
        <p id={`${id}-problem`} role="alert" className="field-problem">
          {problem}
        </p>
      )}
      <button type="submit" disabled={start.isPending}>
        Start run
      </button>
      <ErrorNotice error={start.error} />
    </form>
  );
}
