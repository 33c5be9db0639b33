import { useId, useState, type FormEvent } from 'react';
import { ErrorNotice } from '../errors.js';
import { JsonForm, type JsonSchema } from './json-form.js';
import { JsonView } from '../json-view.js';
import './approvals.css';

/*
 * What a waiting human step asks and how a person answers it: shared by the approvals inbox
 * (signed in) and an approval link's page (no sign-in).
 */

/** A waiting human step, as the inbox and an approval link both carry it. */
export interface HumanStep {
  run_id: string;
  plan_id: string;
  step_id: string;
  type: 'human_approval' | 'human_input';
  prompt: string | null;
  schema: JsonSchema | null;
  run_input: Record<string, unknown>;
}

interface StepContextProps {
  step: HumanStep;
  /** The outputs of the run's completed steps, by step id; undefined while loading. */
  outputs: Record<string, unknown> | undefined;
  /** Whether the context starts open (one step on the page) or folded (a list of them). */
  open: boolean;
}

/** The step's prompt and the run's context: its input and the outputs of its completed steps. */
export function StepContext({ step, outputs, open }: StepContextProps) {
  const earlier = outputs === undefined ? undefined : Object.entries(outputs);
  return (
    <>
      <p className="prompt">{step.prompt ?? <span className="muted">No prompt: the step {step.step_id} waits for a decision.</span>}</p>
      <dl className="step-ids">
        <dt>Run</dt>
        <dd>
          <code>{step.run_id}</code>
        </dd>
        <dt>Plan</dt>
        <dd>
          <code>{step.plan_id}</code>
        </dd>
        <dt>Step</dt>
        <dd>
          <code>{step.step_id}</code> <span className="muted">({step.type === 'human_approval' ? 'approval' : 'input'})</span>
        </dd>
      </dl>
      <details className="step-context" open={open}>
        <summary>Context: the run's input and earlier step outputs</summary>
        <h3>Run input</h3>
        <JsonView value={step.run_input} label="Run input" />
        <h3>Earlier step outputs</h3>
        {earlier === undefined ? (
          <p className="muted">Loading…</p>
        ) : earlier.length === 0 ? (
          <p className="muted">No step has completed before this one.</p>
        ) : (
          earlier.map(([stepId, output]) => (
            <div key={stepId} className="step-output">
              <h4>
                <code>{stepId}</code>
              </h4>
              <JsonView value={output} label={`Output of ${stepId}`} />
            </div>
          ))
        )}
      </details>
    </>
  );
}

export interface Answering {
  pending: boolean;
  /** The last answer's error: shown with its request id, and a 400's field problems at their fields. */
  error: unknown;
  /** A human_approval's decision. */
  onDecide(decision: { approved: boolean; comment?: string }): void;
  /** A human_input's data. */
  onInput(data: Record<string, unknown>): void;
}

/** How a person answers the step: approve or reject with a comment, or the data its schema asks for. */
export function AnswerForm({ step, answering }: { step: HumanStep; answering: Answering }) {
  if (step.type === 'human_input') {
    return (
      <JsonForm
        schema={step.schema}
        fieldPrefix="data"
        error={answering.error}
        pending={answering.pending}
        submitLabel="Submit"
        onSubmit={answering.onInput}
      />
    );
  }
  return <DecisionForm answering={answering} />;
}

function DecisionForm({ answering }: { answering: Answering }) {
  const id = useId();
  const [comment, setComment] = useState('');
  const decide = (approved: boolean) => (event: FormEvent) => {
    event.preventDefault();
    answering.onDecide({ approved, ...(comment.trim() ? { comment: comment.trim() } : {}) });
  };
  return (
    <form className="decision" onSubmit={decide(true)}>
      <label htmlFor={`${id}-comment`}>Comment</label>
      <textarea id={`${id}-comment`} value={comment} onChange={(event) => setComment(event.target.value)} rows={2} maxLength={4000} />
      <div className="decision-buttons">
        <button type="submit" disabled={answering.pending}>
          Approve
        </button>
        <button type="button" className="danger" disabled={answering.pending} onClick={decide(false)}>
          Reject
        </button>
      </div>
      <ErrorNotice error={answering.error} />
    </form>
  );
}
