import { Link } from '@tanstack/react-router';

/** A console URL that names no view (a mistyped or outdated link). */
export function NotFound() {
  return (
    <section>
      <h1>Not found</h1>
      <p className="notice">
        No view of the console has this address. Start from the <Link to="/">Overview</Link>.
      </p>
    </section>
  );
}
