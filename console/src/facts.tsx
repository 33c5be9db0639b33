import type { ReactNode } from 'react';

/** One labelled fact of a detail page's header, inside a `<dl className="facts">`. */
export function Fact({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div>
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}
