import type { ConventionDefinition } from '../protocol/known-conventions.ts';
import type { Queryable } from './driver.ts';

/**
 * Puts the built-in conventions in place (placed, with their axes) where they are not yet:
 * every start runs it, several processes at once included, and it never changes a row that is
 * there (an operator's later placement stays).
 */
export async function seedConventions(
  db: Queryable,
  conventions: readonly ConventionDefinition[],
  now: Date,
): Promise<void> {
  for (const convention of conventions) {
    await db.query(
      `insert into conventions (name, description, dimensions, status, placement, author_id,
         created_at)
       values ($1, $2, $3::text::jsonb, 'placed', $4::text[], null, $5)
       on conflict (name) do nothing`,
      [
        convention.name,
        convention.description,
        JSON.stringify(convention.dimensions),
        convention.placement,
        now,
      ],
    );
    for (const dimension of convention.dimensions) {
      if (!dimension.axis) continue;
      await db.query(
        `insert into convention_axes (convention, field, axis) values ($1, $2, $3)
         on conflict do nothing`,
        [convention.name, dimension.key, dimension.axis],
      );
    }
  }
}
