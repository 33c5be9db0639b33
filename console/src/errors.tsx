import { SwitchboardError } from '../../src/client/browser.js';

interface FieldProblem {
  field: string;
  message: string;
}

function fieldProblems(details: unknown): FieldProblem[] {
  if (!Array.isArray(details)) return [];
  return details.filter((d): d is FieldProblem => typeof d === 'object' && d !== null && 'field' in d && 'message' in d);
}

/** An error from the API with what an operator needs: its message, the bad fields, and the request id for the server's logs. */
export function ErrorNotice({ error }: { error: unknown }) {
  if (error === null || error === undefined) return null;
  const api = error instanceof SwitchboardError ? error : undefined;
  const message = error instanceof Error ? error.message : String(error);
  return (
    <div role="alert" className="notice error">
      <p>
        <strong>{message}</strong>
        {api && (
          <span className="muted">
            {' '}
            ({api.code}, HTTP {api.status})
          </span>
        )}
      </p>
      {fieldProblems(api?.details).length > 0 && (
        <ul>
          {fieldProblems(api?.details).map((problem) => (
            <li key={problem.field}>
              <code>{problem.field}</code>: {problem.message}
            </li>
          ))}
        </ul>
      )}
      {api?.requestId && (
        <p className="muted">
          Request id: <code data-testid="request-id">{api.requestId}</code>
        </p>
      )}
    </div>
  );
}
