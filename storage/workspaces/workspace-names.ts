import type { Queryable } from '../driver.ts';

/** The names workspaces have now, by id, for the capabilities that show where things happened. */

/** The name of each workspace of `workspaceIds` that has one (a name is optional), by id. */
export async function workspaceNames(
  db: Queryable,
  workspaceIds: readonly string[],
): Promise<Map<string, string>> {
  const rows = await db.query<{ workspace_id: string; name: string | null }>(
    'select workspace_id, name from workspaces where workspace_id = any($1::uuid[])',
    [[...workspaceIds]],
  );
  const names = new Map<string, string>();
  for (const row of rows) if (row.name !== null) names.set(row.workspace_id, row.name);
  return names;
}
