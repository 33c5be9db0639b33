import { useState } from 'react';
import { ErrorNotice } from './errors.js';

/**
 * A destructive action in two clicks: `label`, then "Confirm …" or Cancel; the API's error, if
 * any, under it.
 */
export function ConfirmButton({
  label,
  confirm,
  pending,
  error,
  onConfirm,
}: {
  label: string;
  confirm: string;
  pending: boolean;
  error: unknown;
  onConfirm(): void;
}) {
  const [confirming, setConfirming] = useState(false);
  return (
    <>
      {confirming ? (
        <>
          <button type="button" className="danger" disabled={pending} onClick={onConfirm}>
            {confirm}
          </button>
          <button type="button" className="secondary" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </>
      ) : (
        <button type="button" className="secondary" onClick={() => setConfirming(true)}>
          {label}
        </button>
      )}
      <ErrorNotice error={error} />
    </>
  );
}
