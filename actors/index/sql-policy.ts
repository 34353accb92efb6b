/**
 * The gate every agent's SQL passes before it reaches the index (issue 9). User SQL is the most
 * dangerous input the service takes, and roles and read-only transactions do not contain it (on
 * PGlite the session is a superuser and `set_config('role', ...)` escapes any role), so the
 * query is held to an allow-list on its parse tree: PostgreSQL's own parser (libpg-query), one
 * SELECT, and only the node types, fields, relations, functions, operators, types and
 * collations named in sql-allow-lists.ts. Anything not named is refused, so a construct never
 * heard of (a new parser node, a new field) is refused too.
 *
 * What runs is never the agent's text: the checked tree is deparsed, the result parsed and
 * checked again, and its tree must equal the first one (locations aside). That closes the gap
 * where the deparser and the server's parser might read one text two ways, and drops comments.
 *
 * Two things the tree cannot bound are left to the executor: time (a cross join or a regular
 * expression can run long) and memory (`||`, `replace` and `string_agg` can grow a value
 * towards PostgreSQL's 1 GB limit). The executor's time limit and worker thread bound both.
 */
import type { parseSync } from 'libpg-query';
import type { deparseSync } from 'pgsql-deparser';
import { ServiceError } from '../../protocol/errors.ts';
import {
  ALLOWED_FUNCTIONS,
  SQL_SYNTAX_FUNCTIONS,
  FUNCTION_COLUMNS,
  ALLOWED_OPERATORS,
  ALLOWED_TYPES,
  ALLOWED_COLLATIONS,
  SYSTEM_COLUMNS,
  ALLOWED_VALUE_FUNCTIONS,
  ALLOWED_EXPRESSION_KINDS,
  BETWEEN_KINDS,
  ALLOWED_SUBLINK_KINDS,
  NODES,
  LOCATION_KEYS,
  LABELS,
  LOCKING_LABELS,
  type FieldRule,
} from './sql-allow-lists.ts';

/** The relations a query may name, unqualified. */
const INDEX_RELATIONS: readonly string[] = ['files', 'file_versions', 'store', 'axis_values'];

export interface CheckedQuery {
  /** The re-parsed query, deparsed: the only text that is ever run. */
  text: string;
  /** The index relations it names. */
  relations: string[];
  /** The highest $n parameter it uses (0 for none). */
  parameterCount: number;
}

/** Longer texts are refused before they are parsed. */
export const MAX_SQL_LENGTH = 20_000;
/** Deeper trees are refused: the deparser recurses, and real queries stay far below this. */
export const MAX_NESTING = 200;
/** `$101` and above are refused, so a caller never sizes anything by an agent's number. */
const MAX_PARAMETERS = 100;

type Body = Record<string, unknown>;

/** What one walk of a tree learns, beside refusing. */
interface Findings {
  relations: Set<string>;
  parameterCount: number;
  /** Names a FROM-clause function item answers to, with the column names it really has. */
  functionItems: Map<string, Set<string>>;
  /** Every `qualifier.name` column reference, checked once all function items are known. */
  qualifiedColumns: Array<[qualifier: string, name: string]>;
}

interface Place {
  /** Names the WITH clauses around this point define. */
  ctes: ReadonlySet<string>;
  depth: number;
}

function refuse(refused: string, detail: string): never {
  throw new ServiceError('sql_not_allowed', detail, { refused });
}

function refuseThing(refused: string): never {
  return refuse(refused, `${refused} is not allowed in an index query.`);
}

function refuseEmpty(): never {
  return refuse('an empty query', 'The text is an empty query; send one SELECT.');
}

function labelOf(nodeType: string): string {
  const label = LABELS[nodeType];
  if (label !== undefined) return label;
  if (nodeType.endsWith('Stmt')) {
    return nodeType
      .slice(0, -'Stmt'.length)
      .replace(/([a-z])([A-Z])/g, '$1 $2')
      .toUpperCase();
  }
  return nodeType;
}

function isNodeName(key: string): boolean {
  return /^[A-Z]/.test(key);
}

function isBody(value: unknown): value is Body {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The names of a name list (`[{String: {sval}}]`), as the parser resolved them. */
function namesOf(list: unknown): string[] {
  if (!Array.isArray(list)) return refuseThing('an unexpected name');
  return list.map((item) => {
    const name = isBody(item) && isBody(item.String) ? item.String.sval : undefined;
    return typeof name === 'string' ? name : refuseThing('an unexpected name');
  });
}

const functionList = [...ALLOWED_FUNCTIONS].join(', ');
const operatorList = [...ALLOWED_OPERATORS].join(' ');
const typeList = [...ALLOWED_TYPES].join(', ');

function checkFunction(body: Body): void {
  const names = namesOf(body.funcname);
  const [first, second] = names;
  if (names.length === 1 && first !== undefined && ALLOWED_FUNCTIONS.has(first)) return;
  if (names.length === 2 && first === 'pg_catalog' && second !== undefined) {
    if (SQL_SYNTAX_FUNCTIONS.has(second)) return;
  }
  const name = names.join('.');
  refuse(
    name,
    `The function ${name} is not allowed in an index query. Allowed, unqualified: ${functionList}.`,
  );
}

function checkOperator(list: unknown): void {
  const names = namesOf(list);
  const [name] = names;
  if (names.length === 1 && name !== undefined && ALLOWED_OPERATORS.has(name)) return;
  const written = names.length === 1 ? `${name}` : `OPERATOR(${names.join('.')})`;
  refuse(
    written,
    `The operator ${written} is not allowed in an index query. Allowed, unqualified: ${operatorList}.`,
  );
}

function checkType(body: Body): void {
  const names = namesOf(body.names);
  const [first, second] = names;
  const name = names.length === 1 ? first : first === 'pg_catalog' ? second : undefined;
  if (names.length <= 2 && name !== undefined && ALLOWED_TYPES.has(name)) return;
  const written = `::${names.join('.')}`;
  refuse(
    written,
    `The cast ${written} is not allowed in an index query. Allowed types (and arrays of them): ${typeList}.`,
  );
}

function checkColumnName(name: string): void {
  if (SYSTEM_COLUMNS.has(name)) {
    refuse(name, `The system column ${name} is not allowed in an index query.`);
  }
}

function checkColumnRef(body: Body, findings: Findings): void {
  const parts: unknown = body.fields;
  if (!Array.isArray(parts)) return refuseThing('an unexpected column reference');
  const fields = parts.map((field, index) => {
    if (isBody(field) && isBody(field.A_Star) && index === parts.length - 1) return '*';
    const name = isBody(field) && isBody(field.String) ? field.String.sval : undefined;
    return typeof name === 'string' ? name : refuseThing('an unexpected column reference');
  });
  const written = fields.join('.');
  if (fields.length > 2) {
    refuse(
      written,
      `The name ${written} is qualified; an index query names columns as column or relation.column.`,
    );
  }
  fields.forEach(checkColumnName);
  const [qualifier, name] = fields;
  if (qualifier === undefined || name === undefined || name === '*') return;
  // `relation.name` falls back to calling the function `name` on the relation's whole row when
  // the relation has no such column; the pg_ functions that take a whole row read the server.
  if (name.startsWith('pg_')) {
    refuse(written, `The name ${written} is not allowed: ${name} could call a server function.`);
  }
  findings.qualifiedColumns.push([qualifier, name]);
}

/**
 * `(expression).name` calls the function `name` on the expression when it is not a composite
 * with such a field: `('server_version'::text).current_setting` is current_setting(...). So a
 * field may not be selected that way at all; subscripts and `.*` are fine.
 */
function checkIndirection(body: Body): void {
  if (!Array.isArray(body.indirection)) return;
  for (const step of body.indirection) {
    if (isBody(step) && isBody(step.String)) {
      const written = `.${String(step.String.sval)}`;
      refuse(
        written,
        `Field selection ${written} on an expression is not allowed in an index query (it can call a function); select the column from a FROM item instead.`,
      );
    }
  }
}

/**
 * A FROM-clause function returning a single value makes its alias that value, and then
 * `alias.name` calls any one-argument function `name` on it (`t.current_setting` over
 * `unnest(array['server_version']) t`). So the names such an item answers to are recorded with
 * the columns it really has, and `alias.name` must be one of those.
 */
function recordFunctionItem(body: Body, findings: Findings): void {
  const functions = Array.isArray(body.functions) ? body.functions : [];
  const alias = isBody(body.alias) ? body.alias : undefined;
  const aliasName = typeof alias?.aliasname === 'string' ? alias.aliasname : undefined;
  const aliasColumns = alias?.colnames === undefined ? [] : namesOf(alias.colnames);
  const columns = new Set<string>(aliasColumns);
  if (body.ordinality === true) columns.add('ordinality');
  let itemName = aliasName;
  for (const entry of functions) {
    const items = isBody(entry) && isBody(entry.List) ? entry.List.items : undefined;
    const call = Array.isArray(items) ? items[0] : undefined;
    if (!isBody(call) || !isBody(call.FuncCall)) {
      return refuseThing('an expression other than a function call in FROM');
    }
    const name = namesOf(call.FuncCall.funcname).at(-1) ?? '';
    itemName ??= name;
    const own = FUNCTION_COLUMNS[name];
    // Any other function's one column is named by the alias list, else by the alias, else by
    // the function itself.
    if (own !== undefined) own.forEach((column) => columns.add(column));
    else if (aliasColumns.length === 0) columns.add(aliasName ?? name);
  }
  if (itemName === undefined) return;
  // One name may mean different items in different parts of the query: `t.f` is let through
  // only when every item of that name has the column f (else it calls f(t): `t.current_setting`
  // over a text item is current_setting(t)).
  const known = findings.functionItems.get(itemName);
  findings.functionItems.set(
    itemName,
    known === undefined ? columns : new Set([...known].filter((column) => columns.has(column))),
  );
}

function checkRelation(body: Body, place: Place, findings: Findings): void {
  if (body.schemaname !== undefined || body.catalogname !== undefined) {
    const written = [body.catalogname, body.schemaname, body.relname]
      .filter((part) => part !== undefined)
      .join('.');
    refuse(
      written,
      `The relation ${written} is qualified; an index query reads ${INDEX_RELATIONS.join(', ')} (unqualified) and what its own WITH defines.`,
    );
  }
  const name = String(body.relname);
  if (INDEX_RELATIONS.includes(name)) findings.relations.add(name);
  else if (!place.ctes.has(name)) {
    refuse(
      name,
      `The relation ${name} is not allowed; an index query reads ${INDEX_RELATIONS.join(', ')} (unqualified) and what its own WITH defines.`,
    );
  }
}

/** Checks the node's own meaning, beyond its type and fields. */
function checkNodeMeaning(type: string, body: Body, place: Place, findings: Findings): void {
  switch (type) {
    case 'RangeVar':
      return checkRelation(body, place, findings);
    case 'RangeFunction':
      return recordFunctionItem(body, findings);
    case 'FuncCall':
      return checkFunction(body);
    case 'A_Expr': {
      const kind = String(body.kind);
      if (!ALLOWED_EXPRESSION_KINDS.has(kind)) refuseThing(kind);
      if (!BETWEEN_KINDS.has(kind)) checkOperator(body.name);
      return;
    }
    case 'SubLink':
      if (!ALLOWED_SUBLINK_KINDS.has(String(body.subLinkType)))
        refuseThing(String(body.subLinkType));
      if (body.operName !== undefined) checkOperator(body.operName);
      return;
    case 'SortBy':
      if (body.useOp !== undefined) checkOperator(body.useOp);
      return;
    case 'TypeName':
      return checkType(body);
    case 'CollateClause': {
      const names = namesOf(body.collname);
      const [name] = names;
      if (names.length !== 1 || name === undefined || !ALLOWED_COLLATIONS.has(name)) {
        const written = `COLLATE ${names.map((part) => `"${part}"`).join('.')}`;
        refuse(written, `${written} is not allowed in an index query; only COLLATE "C" is.`);
      }
      return;
    }
    case 'ColumnRef':
      return checkColumnRef(body, findings);
    case 'A_Indirection':
      return checkIndirection(body);
    case 'JoinExpr':
      if (body.usingClause !== undefined) namesOf(body.usingClause).forEach(checkColumnName);
      return;
    case 'SQLValueFunction': {
      const op = String(body.op);
      if (!ALLOWED_VALUE_FUNCTIONS.has(op))
        refuseThing(op.replace(/^SVFOP_/, '').replace(/_N$/, ''));
      return;
    }
    case 'ParamRef': {
      const number = typeof body.number === 'number' ? body.number : 0;
      if (number < 1 || number > MAX_PARAMETERS) {
        refuse(
          `$${number}`,
          `$${number} is not allowed: parameters run from $1 to $${MAX_PARAMETERS}.`,
        );
      }
      findings.parameterCount = Math.max(findings.parameterCount, number);
      return;
    }
    case 'CommonTableExpr': {
      const query = body.ctequery;
      const [queryType] = isBody(query) ? Object.keys(query) : [];
      if (queryType !== 'SelectStmt') refuseThing(labelOf(queryType ?? 'an empty WITH query'));
      return;
    }
  }
}

/** A field's value: nodes, lists of nodes, or plain values. */
function walkValue(value: unknown, place: Place, findings: Findings): void {
  if (Array.isArray(value)) {
    for (const item of value) walkValue(item, place, findings);
    return;
  }
  if (!isBody(value)) return;
  const keys = Object.keys(value);
  // ROWS FROM's function lists hold an empty slot where a column definition list may go.
  if (keys.length === 0) return;
  const [type] = keys;
  if (keys.length !== 1 || type === undefined || !isNodeName(type)) {
    return refuseThing('an unexpected part of the parse tree');
  }
  visitNode(type, value[type], place, findings);
}

function visitNode(type: string, body: unknown, place: Place, findings: Findings): void {
  const fields = NODES[type];
  if (fields === undefined) return refuseThing(labelOf(type));
  if (!isBody(body)) return refuseThing('an unexpected part of the parse tree');
  if (place.depth >= MAX_NESTING) {
    refuse('nesting', `The query's nesting passes the limit of ${MAX_NESTING} levels.`);
  }
  const inner: Place = { ctes: place.ctes, depth: place.depth + 1 };
  if (type === 'SelectStmt') return visitSelect(body, inner, findings);
  checkNodeMeaning(type, body, place, findings);
  visitFields(type, fields, body, inner, findings);
}

function visitFields(
  type: string,
  fields: Readonly<Record<string, FieldRule>>,
  body: Body,
  place: Place,
  findings: Findings,
  visitedAlready?: string,
): void {
  for (const [field, value] of Object.entries(body)) {
    if (LOCATION_KEYS.has(field) || field === visitedAlready) continue;
    const rule = fields[field];
    if (rule === undefined) {
      const label = LABELS[`${type}.${field}`] ?? `${type}.${field}`;
      refuseThing(label);
    } else if (rule === true) walkValue(value, place, findings);
    else visitNode(rule, value, place, findings);
  }
}

/**
 * A SELECT opens a scope: each of its WITH queries sees the names defined before it (and those
 * of the SELECTs around it), its body sees them all. A name resolves to a CTE only where
 * PostgreSQL would resolve it so; elsewhere the same name would reach a real table.
 */
function visitSelect(body: Body, place: Place, findings: Findings): void {
  if (body.intoClause !== undefined) refuseThing('INTO');
  if (Array.isArray(body.lockingClause)) {
    const [first] = body.lockingClause;
    const strength =
      isBody(first) && isBody(first.LockingClause) ? String(first.LockingClause.strength) : '';
    refuseThing(LOCKING_LABELS[strength] ?? 'FOR UPDATE');
  }
  let ctes = place.ctes;
  const withClause = body.withClause;
  if (withClause !== undefined) {
    if (!isBody(withClause)) return refuseThing('an unexpected WITH clause');
    if (withClause.recursive === true) refuseThing('WITH RECURSIVE');
    for (const [field, value] of Object.entries(withClause)) {
      if (field !== 'ctes' && field !== 'recursive' && !LOCATION_KEYS.has(field)) {
        refuseThing(`WithClause.${field}`);
      }
      if (field !== 'ctes') continue;
      for (const cte of Array.isArray(value) ? value : [value]) {
        walkValue(cte, { ctes, depth: place.depth }, findings);
        const name =
          isBody(cte) && isBody(cte.CommonTableExpr) ? cte.CommonTableExpr.ctename : undefined;
        if (typeof name === 'string') ctes = new Set([...ctes, name]);
      }
    }
  }
  const fields = NODES.SelectStmt ?? {};
  visitFields('SelectStmt', fields, body, { ctes, depth: place.depth }, findings, 'withClause');
}

function checkTree(tree: unknown): Findings {
  const stmts = isBody(tree) && Array.isArray(tree.stmts) ? tree.stmts : [];
  if (stmts.length === 0) refuseEmpty();
  if (stmts.length > 1) {
    refuse(
      'more than one statement',
      `The text holds more than one statement (${stmts.length}); an index query is exactly one SELECT.`,
    );
  }
  const stmt = isBody(stmts[0]) ? stmts[0].stmt : undefined;
  const [type] = isBody(stmt) ? Object.keys(stmt) : [];
  if (!isBody(stmt) || type === undefined) return refuseThing('an unexpected statement');
  if (type !== 'SelectStmt') {
    const label = labelOf(type);
    refuse(label, `${label} is not allowed: an index query is exactly one SELECT.`);
  }
  const findings: Findings = {
    relations: new Set(),
    parameterCount: 0,
    functionItems: new Map(),
    qualifiedColumns: [],
  };
  visitNode(type, stmt[type], { ctes: new Set(), depth: 0 }, findings);
  for (const [qualifier, name] of findings.qualifiedColumns) {
    const columns = findings.functionItems.get(qualifier);
    if (columns !== undefined && !columns.has(name)) {
      refuse(
        `${qualifier}.${name}`,
        `The name ${qualifier}.${name} is not allowed: ${qualifier} is a function in FROM whose columns are ${[...columns].join(', ') || 'unnamed'}; name them with an alias list, e.g. ${qualifier}(value).`,
      );
    }
  }
  return findings;
}

function parseOrRefuse(sql: string): unknown {
  try {
    return (tools as SqlTools).parse(sql);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return refuse('syntax error', `The query does not parse: ${message}.`);
  }
}

/** The tree with where-it-was-written left out: what two readings of one query must share. */
export function treeShape(tree: unknown): string {
  return JSON.stringify(tree, (key, value: unknown) =>
    LOCATION_KEYS.has(key) ? undefined : value,
  );
}

/** PostgreSQL's parser and deparser (~12 MB of RSS), loaded by the first query agents send. */
interface SqlTools {
  parse: typeof parseSync;
  deparse: typeof deparseSync;
}
let tools: SqlTools | undefined;
let loading: Promise<SqlTools> | undefined;

async function loadSqlTools(): Promise<SqlTools> {
  const parser = await import('libpg-query');
  await parser.loadModule();
  const { deparseSync: deparse } = await import('pgsql-deparser');
  return (tools = { parse: parser.parseSync, deparse });
}

/** Throws ServiceError('sql_not_allowed', detail naming what was refused, {refused: '<what>'}) (protocol/errors.ts). */
export async function checkUserSql(sql: string): Promise<CheckedQuery> {
  const { deparse } = await (loading ??= loadSqlTools());
  if (sql.length > MAX_SQL_LENGTH) {
    refuse(
      'length',
      `The query's length, ${sql.length} characters, passes the limit of ${MAX_SQL_LENGTH}.`,
    );
  }
  // The parser reads a C string: whatever follows a NUL would never be checked.
  if (sql.includes('\0')) refuse('a NUL character', 'The query holds a NUL character.');
  if (sql.trim() === '') refuseEmpty();
  const tree = parseOrRefuse(sql);
  checkTree(tree);

  let text: string;
  try {
    text = deparse(tree as Parameters<typeof deparseSync>[0], { pretty: false });
  } catch {
    return refuseThing('a construct the service cannot rewrite');
  }
  const reread = parseOrRefuse(text);
  const findings = checkTree(reread);
  if (treeShape(reread) !== treeShape(tree)) {
    refuseThing('a construct the service cannot rewrite faithfully');
  }
  return {
    text,
    relations: INDEX_RELATIONS.filter((name) => findings.relations.has(name)),
    parameterCount: findings.parameterCount,
  };
}
