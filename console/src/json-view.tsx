import { useSyncExternalStore } from 'react';
import { darkStyles, defaultStyles, JsonView as JsonTree } from 'react-json-view-lite';
import 'react-json-view-lite/dist/index.css';
import './json-view.css';

const DARK = '(prefers-color-scheme: dark)';
const subscribe = (onChange: () => void) => {
  const query = window.matchMedia(DARK);
  query.addEventListener('change', onChange);
  return () => query.removeEventListener('change', onChange);
};
const prefersDark = () => window.matchMedia(DARK).matches;
// Two levels open: a step's output fields and their values; deeper ones open on a click.
const OPEN_LEVELS = 2;
const openNear = (level: number) => level < OPEN_LEVELS;

/** A JSON value as a collapsible tree (objects and arrays; anything else as its JSON text), in the system's colour scheme. */
export function JsonView({ value, label }: { value: unknown; label: string }) {
  const dark = useSyncExternalStore(subscribe, prefersDark);
  if (value === null || typeof value !== 'object') {
    return (
      <code className="json-view json-scalar" aria-label={label}>
        {value === undefined ? '—' : JSON.stringify(value)}
      </code>
    );
  }
  return (
    <div className="json-view" aria-label={label} role="group">
      <JsonTree data={value} shouldExpandNode={openNear} style={{ ...(dark ? darkStyles : defaultStyles), container: 'json-tree' }} />
    </div>
  );
}
