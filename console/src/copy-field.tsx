import { useState, type ReactNode } from 'react';

interface CopyFieldProps {
  /** The text to show and copy (a new key, a secret, a link). */
  value: string;
  /** The field's accessible name. */
  label: string;
  testId?: string;
  /** Buttons after Copy (Done…). */
  children?: ReactNode;
}

/** A read-only field with a Copy button: for a value the user must take away (shown once, or long). */
export function CopyField({ value, label, testId, children }: CopyFieldProps) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied(true);
    } catch {
      // No clipboard permission (an http page, a locked-down browser): the value stays selectable.
    }
  };
  return (
    <p className="secret">
      <input readOnly value={value} aria-label={label} data-testid={testId} onFocus={(event) => event.target.select()} />
      <button type="button" className="secondary" onClick={() => void copy()}>
        {copied ? 'Copied' : 'Copy'}
      </button>
      {children}
    </p>
  );
}
