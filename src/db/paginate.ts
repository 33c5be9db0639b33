import type { SelectQueryBuilder } from 'kysely';
import type { Page, Paged } from '../kernel/pagination.js';

/**
 * One page of a list query and the total in a single round trip (`count(*) over ()`), with a
 * count query only when the page is empty past the first row. `query` carries its selection
 * and order; this adds the window.
 */
export async function paginate<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>, window: Page): Promise<Paged<O>> {
  const rows = await query
    .select((eb) => eb.fn.countAll<number>().over().as('__total'))
    .limit(window.limit)
    .offset(window.offset)
    .execute();
  if (rows.length === 0) {
    if (window.offset === 0) return { items: [], total: 0 };
    const counted = await query
      .clearSelect()
      .clearOrderBy()
      .select((eb) => eb.fn.countAll<number>().as('__total'))
      .executeTakeFirst();
    return { items: [], total: Number((counted as { __total?: number } | undefined)?.__total ?? 0) };
  }
  const total = Number((rows[0] as unknown as { __total: number }).__total);
  const items = rows.map((row) => {
    const { __total: _total, ...item } = row as O & { __total: number };
    return item as O;
  });
  return { items, total };
}
