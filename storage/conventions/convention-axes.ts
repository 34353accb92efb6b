import type { Queryable } from '../driver.ts';

/**
 * The fields of each convention that stand on the store's place and price axes
 * (`convention_axes`, migration 008): `place=Berlin` finds `location: Berlin` and `city: Berlin`
 * alike. Files on no convention, or on one not registered, have the trunk's ('').
 */

/** The place/price fields of a convention ('' for files on none, or on one not registered). */
export async function axisFieldsOf(
  db: Queryable,
  convention: string | null,
): Promise<{ field: string; axis: 'place' | 'price' }[]> {
  return db.query<{ field: string; axis: 'place' | 'price' }>(
    `select field, axis from convention_axes where convention = coalesce(
       (select name from conventions where name = $1), '') order by field`,
    [convention],
  );
}

/**
 * SQL for a query of one column, `field`: the fields on `axis`, of the convention the SQL
 * expression `convention` names when given ('' for the trunk), of every convention when not.
 */
export function axisFieldsSql(axis: 'place' | 'price', convention?: string): string {
  const of = convention === undefined ? '' : `ax.convention = ${convention} and`;
  return `select ax.field from convention_axes ax where ${of} ax.axis = '${axis}'`;
}
