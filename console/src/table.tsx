import type { ReactNode } from 'react';

/** A column's header: its label, or one read out to screen readers only (an actions column). */
export type Column = string | { label: string; visuallyHidden: true };

/** A table of rows that scrolls sideways on a narrow screen rather than widening the page. */
export function Table({ columns, children }: { columns: Column[]; children: ReactNode }) {
  return (
    <div className="table-scroll">
      <table>
        <thead>
          <tr>
            {columns.map((column) =>
              typeof column === 'string' ? (
                <th scope="col" key={column}>
                  {column}
                </th>
              ) : (
                <th scope="col" key={column.label}>
                  <span className="visually-hidden">{column.label}</span>
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
