import { useSyncExternalStore } from 'react';
import { darkStyles, defaultStyles, JsonView } from 'react-json-view-lite';
import 'react-json-view-lite/dist/index.css';

const DARK = '(prefers-color-scheme: dark)';

function subscribeToScheme(onChange: () => void): () => void {
  const query = window.matchMedia(DARK);
  query.addEventListener('change', onChange);
  return () => query.removeEventListener('change', onChange);
}

/** True while the system asks for dark colours (the viewer's styles are not CSS variables). */
function usePrefersDark(): boolean {
  return useSyncExternalStore(subscribeToScheme, () => window.matchMedia(DARK).matches);
}

/** A JSON value: objects and arrays as a tree (two levels open), anything else as its JSON text. */
export function JsonValue({ value, label }: { value: unknown; label: string }) {
  const dark = usePrefersDark();
  if (typeof value !== 'object' || value === null) {
    return (
      <pre className="json-scalar" aria-label={label}>
        {JSON.stringify(value)}
      </pre>
    );
  }
  return (
    <div className="json-view" aria-label={label}>
      <JsonView data={value} style={dark ? darkStyles : defaultStyles} shouldExpandNode={(level) => level < 2} />
    </div>
  );
}
