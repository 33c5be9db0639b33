import { useId, type FormEvent, type ReactNode } from 'react';
import { WITHIN, WITHIN_LABELS, type TimeChoice, type TimeWindowDraft, type Within } from './time-window.js';

/**
 * The fields of the lists' filter forms. A list keeps its filters in the URL: its form holds
 * what is being typed and applies it on submit (into the URL, back to page 1), and is
 * remounted (a `key` of the filters) when the URL changes them.
 */

/** A list's filter form: its fields, then the Filter button. */
export function FilterForm({ label, onApply, children }: { label: string; onApply(): void; children: ReactNode }) {
  const submit = (event: FormEvent) => {
    event.preventDefault();
    onApply();
  };
  return (
    <form className="filters" role="search" aria-label={label} onSubmit={submit}>
      {children}
      <button type="submit" className="secondary">
        Filter
      </button>
    </form>
  );
}

interface TextFilterProps {
  label: string;
  value: string;
  onChange(value: string): void;
  placeholder?: string;
  /** Values to offer as one types (a datalist). */
  suggestions?: readonly string[];
  className?: string;
}

/** A free-text filter; a list reads it trimmed, and empty as none (`filterText`). */
export function TextFilter({ label, value, onChange, placeholder, suggestions, className }: TextFilterProps) {
  const id = useId();
  return (
    <label className={className}>
      {label}
      <input
        value={value}
        onChange={(event) => onChange(event.target.value)}
        placeholder={placeholder}
        list={suggestions ? id : undefined}
      />
      {suggestions && (
        <datalist id={id}>
          {suggestions.map((suggestion) => (
            <option key={suggestion} value={suggestion} />
          ))}
        </datalist>
      )}
    </label>
  );
}

/** A text field's value as a filter: trimmed, and undefined when empty (so it leaves the URL). */
export function filterText(value: string): string | undefined {
  return value.trim() || undefined;
}

interface ChoiceFilterProps<T extends string> {
  label: string;
  value: NoInfer<T> | '';
  onChange(value: NoInfer<T> | ''): void;
  /** The values (which give the field its type). */
  choices: readonly T[];
  /** The label of no choice ("Any status"). */
  any: string;
}

/** One of a fixed set of values, or any. */
export function ChoiceFilter<T extends string>({ label, value, onChange, choices, any }: ChoiceFilterProps<T>) {
  return (
    <label>
      {label}
      <select value={value} onChange={(event) => onChange(event.target.value as T | '')}>
        <option value="">{any}</option>
        {choices.map((choice) => (
          <option key={choice} value={choice}>
            {choice}
          </option>
        ))}
      </select>
    </label>
  );
}

/** A time filter: any time, a window back from now, or between two times (From and Until appear for that). */
export function TimeWindowFilter({
  label,
  value,
  onChange,
}: {
  label: string;
  value: TimeWindowDraft;
  onChange(value: TimeWindowDraft): void;
}) {
  return (
    <>
      <label>
        {label}
        <select value={value.choice} onChange={(event) => onChange({ ...value, choice: event.target.value as TimeChoice })}>
          <option value="any">Any time</option>
          {(Object.keys(WITHIN) as Within[]).map((window) => (
            <option key={window} value={window}>
              {WITHIN_LABELS[window]}
            </option>
          ))}
          <option value="between">Between…</option>
        </select>
      </label>
      {value.choice === 'between' && (
        <>
          <label>
            From
            <input type="datetime-local" value={value.from} onChange={(event) => onChange({ ...value, from: event.target.value })} />
          </label>
          <label>
            Until
            <input type="datetime-local" value={value.to} onChange={(event) => onChange({ ...value, to: event.target.value })} />
          </label>
        </>
      )}
    </>
  );
}
