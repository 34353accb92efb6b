/**
 * The conventions registered (`conventions`), as other capabilities' statements name them: a
 * file's convention counts only when registered, and a placed one has its placement.
 */

/** SQL scalar subquery: the name the SQL expression `name` gives, when registered; else null. */
export function registeredConventionSql(name: string): string {
  return `(select cv.name from conventions cv where cv.name = ${name})`;
}

/**
 * SQL for a query over the registered conventions: `name`, `status` ('placed' or not) and
 * `placement` (where a placed one stands). Join it on `name`.
 */
export function conventionPlacementsSql(): string {
  return 'select c.name, c.status, c.placement from conventions c';
}
