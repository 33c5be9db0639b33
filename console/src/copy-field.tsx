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

/**
 * A new resource's signing secret, shown once: what it signs, a field to copy it, and Done to
 * dismiss it (webhooks, notification channels).
 */
export function SigningSecretNotice({
  created,
  signs,
  secret,
  testId,
  onDone,
}: {
  /** What was created ("Webhook", "Channel"). */
  created: string;
  /** How the secret is used, after "Verify each …". */
  signs: ReactNode;
  secret: string;
  testId: string;
  onDone: () => void;
}) {
  return (
    <div className="notice success" role="status">
      <p>
        <strong>{created} created. Copy its signing secret now: it is not shown again.</strong> Verify each {signs}
      </p>
      <CopyField value={secret} label="Signing secret" testId={testId}>
        <button type="button" onClick={onDone}>
          Done
        </button>
      </CopyField>
    </div>
  );
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
