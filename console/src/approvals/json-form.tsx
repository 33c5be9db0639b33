import type { FormProps } from '@rjsf/core';
import { lazy, Suspense, useId, useMemo, useState, type FormEvent } from 'react';
import { SwitchboardError } from '../../../src/client/browser.js';
import { ErrorNotice } from '../errors.js';
import { errorTreeOf, parseJsonObject, schemaHasFields, type ErrorTree, type JsonSchema } from './json-form-model.js';
import './json-form.css';

export type { JsonSchema } from './json-form-model.js';

type JsonObject = Record<string, unknown>;

export interface JsonFormProps {
  /** What the value must match; without fields to lay out (null, `{}`) the form is a JSON text field. */
  schema: JsonSchema | null | undefined;
  /** Where the value sits in the request body, as the server names its fields: `data` for a human_input answer. */
  fieldPrefix: string;
  /** The last submit's error: its message and request id are shown, and a 400's field problems at their fields. */
  error: unknown;
  pending: boolean;
  submitLabel: string;
  onSubmit(value: JsonObject): void;
  /** The value to start from. */
  initial?: JsonObject;
}

/**
 * A form generated from a JSON Schema (@rjsf/core, loaded on first use so the first page stays
 * small), or a JSON text field when there is no schema to lay out. The server is the one judge of
 * the value: the page does not validate it again (two validators would only disagree); the
 * server's 400 puts each problem at its field.
 */
export function JsonForm(props: JsonFormProps) {
  const details = props.error instanceof SwitchboardError ? props.error.details : undefined;
  const errors = useMemo(() => errorTreeOf(details, props.fieldPrefix), [details, props.fieldPrefix]);
  return (
    <div className="json-form">
      {schemaHasFields(props.schema) ? (
        <Suspense fallback={<p className="muted">Loading the form…</p>}>
          <SchemaForm {...props} schema={props.schema} errors={errors} />
        </Suspense>
      ) : (
        <JsonTextForm {...props} errors={errors} />
      )}
      <ErrorNotice error={props.error} />
    </div>
  );
}

type FormBodyProps = JsonFormProps & { errors: ErrorTree | undefined };

const SchemaForm = lazy(async () => {
  const [{ default: Form }, { schemaMatcher }] = await Promise.all([
    import('@rjsf/core/lib/components/Form.js'),
    import('./schema-matcher.js'),
  ]);
  function SchemaForm({ schema, errors, pending, submitLabel, onSubmit, initial }: FormBodyProps & { schema: JsonSchema }) {
    const [value, setValue] = useState<JsonObject>(initial ?? {});
    // Each form's field ids apart from any other's on the page (rjsf names them root_<field>).
    const idPrefix = `form${useId().replaceAll(':', '')}`;
    return (
      <Form
        schema={schema as FormProps['schema']}
        validator={schemaMatcher}
        formData={value}
        onChange={(change) => setValue(change.formData as JsonObject)}
        onSubmit={(submitted) => onSubmit((submitted.formData ?? {}) as JsonObject)}
        extraErrors={errors as FormProps['extraErrors']}
        idPrefix={idPrefix}
        noValidate
        noHtml5Validate
        showErrorList={false}
        disabled={pending}
      >
        <SubmitButton pending={pending} label={submitLabel} />
      </Form>
    );
  }
  return { default: SchemaForm };
});

/** Any JSON object, typed as text; a value that is not one is refused here, before the server. */
function JsonTextForm({ errors, pending, submitLabel, onSubmit, initial }: FormBodyProps) {
  const id = useId();
  const [text, setText] = useState(() => JSON.stringify(initial ?? {}, null, 2));
  const [problem, setProblem] = useState<string | null>(null);
  const problems = [...(problem ? [problem] : []), ...(errors?.__errors ?? [])];
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const parsed = parseJsonObject(text);
    setProblem('problem' in parsed ? parsed.problem : null);
    if ('value' in parsed) onSubmit(parsed.value);
  };
  return (
    <form onSubmit={submit} className="json-text-form">
      <label htmlFor={`${id}-text`}>Value (a JSON object)</label>
      <textarea
        id={`${id}-text`}
        value={text}
        onChange={(event) => setText(event.target.value)}
        rows={Math.min(12, Math.max(4, text.split('\n').length + 1))}
        spellCheck={false}
        aria-invalid={problems.length > 0}
        aria-describedby={problems.length > 0 ? `${id}-problems` : undefined}
        disabled={pending}
      />
      {problems.length > 0 && (
        <ul id={`${id}-problems`} className="field-problems">
          {problems.map((message) => (
            <li key={message}>{message}</li>
          ))}
        </ul>
      )}
      <SubmitButton pending={pending} label={submitLabel} />
    </form>
  );
}

function SubmitButton({ pending, label }: { pending: boolean; label: string }) {
  return (
    <div className="json-form-actions">
      <button type="submit" disabled={pending}>
        {label}
      </button>
    </div>
  );
}
