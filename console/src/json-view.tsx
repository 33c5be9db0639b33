import { useSyncExternalStore } from 'react';
import { allExpanded, darkStyles, defaultStyles, JsonView } from 'react-json-view-lite';
import 'react-json-view-lite/dist/index.css';

const DARK = '(prefers-color-scheme: dark)';

function useDarkScheme(): boolean {
  return useSyncExternalStore(
    (listener) => {
      const query = window.matchMedia(DARK);
      query.addEventListener('change', listener);
      return () => query.removeEventListener('change', listener);
    },
    () => window.matchMedia(DARK).matches,
  );
}

/**
 * A JSON value as a tree (objects and arrays expand and collapse), in the system's colour scheme.
 * A string that holds JSON (an agent's acknowledgement output) is shown as that JSON; other text as text.
 */
export function JsonValue({ value, label }: { value: unknown; label: string }) {
  const dark = useDarkScheme();
  const data = typeof value === 'string' ? parseJson(value) : value;
  return (
    <div className="json-view" role="group" aria-label={label}>
      {data === null || typeof data !== 'object' ? (
        <pre>{typeof data === 'string' ? data : JSON.stringify(data)}</pre>
      ) : (
        <JsonView data={data} shouldExpandNode={allExpanded} style={dark ? darkStyles : defaultStyles} />
      )}
    </div>
  );
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
