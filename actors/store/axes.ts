import type { Queryable } from '../../storage/driver.ts';
import { axisFieldsOf } from '../../storage/conventions/convention-axes.ts';

/**
 * The place and price values of a listing, by its convention's axes: `place=Berlin` is found in
 * `location: Berlin` and `city: Berlin` alike. Watches and matches compare on these.
 */
export async function axesOf(
  db: Queryable,
  convention: string | null,
  fields: Record<string, unknown>,
): Promise<{ axis: 'place' | 'price'; value: string }[]> {
  const axes: { axis: 'place' | 'price'; value: string }[] = [];
  for (const { field, axis } of await axisFieldsOf(db, convention)) {
    const raw = fields[field];
    for (const value of Array.isArray(raw) ? raw : [raw]) {
      if (typeof value === 'string' || typeof value === 'number') {
        axes.push({ axis, value: String(value) });
      }
    }
  }
  return axes;
}
