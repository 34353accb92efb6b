import type { Queryable } from '../driver.ts';

/**
 * The secret called `name`, made from `fresh` on first use. Processes starting at once on one
 * database agree: the first insert wins and everyone reads the row it left.
 */
export async function ensureServiceSecret(
  db: Queryable,
  name: string,
  fresh: Uint8Array,
): Promise<Uint8Array> {
  await db.query(
    'insert into service_secrets (name, secret) values ($1, $2) on conflict (name) do nothing',
    [name, fresh],
  );
  const [row] = await db.query<{ secret: Uint8Array }>(
    'select secret from service_secrets where name = $1',
    [name],
  );
  if (!row) throw new Error(`service secret ${name} was not kept`);
  return row.secret;
}
