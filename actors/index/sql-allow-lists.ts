/**
 * What the index's SQL policy (sql-policy.ts) allows, as data: the functions, operators, types,
 * collations and parse-tree nodes (with their fields) an agent's query may use, and the words
 * refusals name things by. Anything not listed here is refused.
 */

/**
 * Functions a query may call, unqualified. Aggregates, window functions and plain scalar ones
 * that read only their arguments. Left out on purpose, among everything else: generate_series,
 * repeat, lpad, rpad and format (a short call builds a huge value or row set), and every
 * function that reads the server or the session (pg_*, current_setting, set_config, version).
 * COALESCE, NULLIF, GREATEST and LEAST are expressions of their own, not calls.
 */
export const ALLOWED_FUNCTIONS: ReadonlySet<string> = new Set([
  // aggregates
  'count',
  'sum',
  'avg',
  'min',
  'max',
  'string_agg',
  'array_agg',
  'jsonb_agg',
  'jsonb_object_agg',
  'bool_and',
  'bool_or',
  // window functions
  'row_number',
  'rank',
  'dense_rank',
  'percent_rank',
  'cume_dist',
  'ntile',
  'lag',
  'lead',
  'first_value',
  'last_value',
  // text
  'lower',
  'upper',
  'length',
  'char_length',
  'btrim',
  'ltrim',
  'rtrim',
  'substring',
  'substr',
  'position',
  'strpos',
  'replace',
  'split_part',
  'left',
  'right',
  'concat',
  'concat_ws',
  'starts_with',
  // numbers
  'abs',
  'round',
  'floor',
  'ceil',
  'ceiling',
  'trunc',
  // time
  'now',
  'date_trunc',
  'date_part',
  'extract',
  'age',
  'to_char',
  'to_date',
  'to_timestamp',
  'to_number',
  // jsonb
  'jsonb_typeof',
  'jsonb_array_length',
  'jsonb_object_keys',
  'jsonb_array_elements',
  'jsonb_array_elements_text',
  'jsonb_each',
  'jsonb_each_text',
  'jsonb_extract_path',
  'jsonb_extract_path_text',
  'jsonb_build_object',
  'jsonb_build_array',
  'to_jsonb',
  // arrays
  'unnest',
  'array_length',
  'cardinality',
  // full-text search
  'to_tsvector',
  'to_tsquery',
  'plainto_tsquery',
  'phraseto_tsquery',
  'websearch_to_tsquery',
  'ts_rank',
  'ts_rank_cd',
  'ts_headline',
]);

/**
 * The parser itself writes these as `pg_catalog.<name>` for SQL syntax (EXTRACT, POSITION,
 * SUBSTRING, TRIM, OVERLAY, AT TIME ZONE, LIKE/SIMILAR ... ESCAPE, NORMALIZE), so that one
 * qualification is let through for them and no other. (COLLATION FOR, SYSTEM_USER and the XML
 * syntax also come out qualified, and are refused.)
 */
export const SQL_SYNTAX_FUNCTIONS: ReadonlySet<string> = new Set([
  'extract',
  'position',
  'substring',
  'btrim',
  'ltrim',
  'rtrim',
  'overlay',
  'timezone',
  'like_escape',
  'similar_to_escape',
  'normalize',
  'is_normalized',
]);

/** Output columns the allowed functions name themselves (by OUT parameters), whatever the alias. */
export const FUNCTION_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  jsonb_each: ['key', 'value'],
  jsonb_each_text: ['key', 'value'],
  jsonb_array_elements: ['value'],
  jsonb_array_elements_text: ['value'],
};

/**
 * Operators, unqualified (`OPERATOR(schema.op)` is refused). Comparison, arithmetic, text
 * (LIKE is ~~, regular expressions ~), jsonb (->, ->>, #>, #>>, @>, <@, ?, ?|, ?&), arrays (&&)
 * and full-text search (@@). The parser spells != as <>.
 */
export const ALLOWED_OPERATORS: ReadonlySet<string> = new Set([
  '=',
  '<>',
  '<',
  '>',
  '<=',
  '>=',
  '+',
  '-',
  '*',
  '/',
  '%',
  '||',
  '~~',
  '~~*',
  '!~~',
  '!~~*',
  '~',
  '~*',
  '!~',
  '!~*',
  '->',
  '->>',
  '#>',
  '#>>',
  '@>',
  '<@',
  '?',
  '?|',
  '?&',
  '@@',
  '&&',
]);

/**
 * Types a value may be cast to, by their internal names (the parser turns `integer` into
 * `pg_catalog.int4`, `double precision` into `pg_catalog.float8`, and so on; `pg_catalog.` is
 * the only qualification accepted). Arrays of them are allowed. Never reg* (a cast to regclass
 * or regproc looks the catalogue up) nor oid.
 */
export const ALLOWED_TYPES: ReadonlySet<string> = new Set([
  'text',
  'varchar',
  'bpchar',
  'int2',
  'int4',
  'int8',
  'numeric',
  'float4',
  'float8',
  'bool',
  'date',
  'time',
  'timetz',
  'timestamp',
  'timestamptz',
  'interval',
  'json',
  'jsonb',
  'uuid',
  'tsvector',
  'tsquery',
]);

/** Only the byte-order collation: it is always there and names no locale. */
export const ALLOWED_COLLATIONS: ReadonlySet<string> = new Set(['C']);

export const SYSTEM_COLUMNS: ReadonlySet<string> = new Set([
  'ctid',
  'xmin',
  'xmax',
  'cmin',
  'cmax',
  'tableoid',
  'oid',
]);

/** CURRENT_DATE and its kin; CURRENT_USER, CURRENT_SCHEMA and the like name the server. */
export const ALLOWED_VALUE_FUNCTIONS: ReadonlySet<string> = new Set([
  'SVFOP_CURRENT_DATE',
  'SVFOP_CURRENT_TIME',
  'SVFOP_CURRENT_TIME_N',
  'SVFOP_CURRENT_TIMESTAMP',
  'SVFOP_CURRENT_TIMESTAMP_N',
  'SVFOP_LOCALTIME',
  'SVFOP_LOCALTIME_N',
  'SVFOP_LOCALTIMESTAMP',
  'SVFOP_LOCALTIMESTAMP_N',
]);

export const ALLOWED_EXPRESSION_KINDS: ReadonlySet<string> = new Set([
  'AEXPR_OP',
  'AEXPR_OP_ANY',
  'AEXPR_OP_ALL',
  'AEXPR_DISTINCT',
  'AEXPR_NOT_DISTINCT',
  'AEXPR_NULLIF',
  'AEXPR_IN',
  'AEXPR_LIKE',
  'AEXPR_ILIKE',
  'AEXPR_SIMILAR',
  'AEXPR_BETWEEN',
  'AEXPR_NOT_BETWEEN',
  'AEXPR_BETWEEN_SYM',
  'AEXPR_NOT_BETWEEN_SYM',
]);
/** BETWEEN carries its keyword where other kinds carry an operator. */
export const BETWEEN_KINDS: ReadonlySet<string> = new Set([
  'AEXPR_BETWEEN',
  'AEXPR_NOT_BETWEEN',
  'AEXPR_BETWEEN_SYM',
  'AEXPR_NOT_BETWEEN_SYM',
]);

export const ALLOWED_SUBLINK_KINDS: ReadonlySet<string> = new Set([
  'EXISTS_SUBLINK',
  'ALL_SUBLINK',
  'ANY_SUBLINK',
  'ROWCOMPARE_SUBLINK',
  'EXPR_SUBLINK',
  'ARRAY_SUBLINK',
]);

/**
 * A field holds either other nodes or plain values (`true`: walked as it comes), or the body
 * of one node type written without its wrapper (the type's name).
 */
export type FieldRule = true | string;

/**
 * The allow-list of node types and, for each, the fields it may carry. A node type or a field
 * not named here is refused. `location` fields are skipped everywhere.
 */
export const NODES: Readonly<Record<string, Readonly<Record<string, FieldRule>>>> = {
  SelectStmt: {
    distinctClause: true,
    targetList: true,
    fromClause: true,
    whereClause: true,
    groupClause: true,
    groupDistinct: true,
    havingClause: true,
    windowClause: true,
    valuesLists: true,
    sortClause: true,
    limitOffset: true,
    limitCount: true,
    limitOption: true,
    withClause: 'WithClause',
    op: true,
    all: true,
    larg: 'SelectStmt',
    rarg: 'SelectStmt',
  },
  WithClause: { ctes: true, recursive: true },
  CommonTableExpr: { ctename: true, aliascolnames: true, ctematerialized: true, ctequery: true },
  ResTarget: { name: true, val: true },
  RangeVar: { relname: true, inh: true, relpersistence: true, alias: 'Alias' },
  RangeSubselect: { lateral: true, subquery: true, alias: 'Alias' },
  RangeFunction: { lateral: true, ordinality: true, functions: true, alias: 'Alias' },
  JoinExpr: {
    jointype: true,
    isNatural: true,
    larg: true,
    rarg: true,
    usingClause: true,
    join_using_alias: 'Alias',
    quals: true,
    alias: 'Alias',
    rtindex: true,
  },
  Alias: { aliasname: true, colnames: true },
  ColumnRef: { fields: true },
  ParamRef: { number: true },
  A_Const: {
    ival: 'Integer',
    fval: 'Float',
    boolval: 'Boolean',
    sval: 'String',
    bsval: 'BitString',
    isnull: true,
  },
  A_Expr: {
    kind: true,
    name: true,
    lexpr: true,
    rexpr: true,
    rexpr_list_start: true,
    rexpr_list_end: true,
  },
  BoolExpr: { boolop: true, args: true },
  NullTest: { arg: true, nulltesttype: true, argisrow: true },
  BooleanTest: { arg: true, booltesttype: true },
  SubLink: { subLinkType: true, subLinkId: true, testexpr: true, operName: true, subselect: true },
  FuncCall: {
    funcname: true,
    args: true,
    agg_order: true,
    agg_filter: true,
    over: 'WindowDef',
    agg_within_group: true,
    agg_star: true,
    agg_distinct: true,
    func_variadic: true,
    funcformat: true,
  },
  NamedArgExpr: { arg: true, name: true, argnumber: true },
  WindowDef: {
    name: true,
    refname: true,
    partitionClause: true,
    orderClause: true,
    frameOptions: true,
    startOffset: true,
    endOffset: true,
  },
  SortBy: { node: true, sortby_dir: true, sortby_nulls: true, useOp: true },
  GroupingSet: { kind: true, content: true },
  GroupingFunc: { args: true },
  TypeCast: { arg: true, typeName: 'TypeName' },
  TypeName: { names: true, typemod: true, typmods: true, arrayBounds: true },
  CollateClause: { arg: true, collname: true },
  CaseExpr: { arg: true, args: true, defresult: true },
  CaseWhen: { expr: true, result: true },
  CoalesceExpr: { args: true },
  MinMaxExpr: { op: true, args: true },
  RowExpr: { args: true, row_format: true, colnames: true },
  A_ArrayExpr: { elements: true, list_start: true, list_end: true },
  A_Indirection: { arg: true, indirection: true },
  A_Indices: { is_slice: true, lidx: true, uidx: true },
  A_Star: {},
  SQLValueFunction: { op: true, typmod: true },
  List: { items: true },
  String: { sval: true },
  Integer: { ival: true },
  Float: { fval: true },
  Boolean: { boolval: true },
  BitString: { bsval: true },
};

/** Keys that say where a node was written, not what it means. */
export const LOCATION_KEYS: ReadonlySet<string> = new Set([
  'location',
  'stmt_location',
  'stmt_len',
  'list_start',
  'list_end',
  'rexpr_list_start',
  'rexpr_list_end',
]);

/** How a refused node or field is named to the agent, where its parser name would not help. */
export const LABELS: Readonly<Record<string, string>> = {
  VariableSetStmt: 'SET',
  VariableShowStmt: 'SHOW',
  TransactionStmt: 'a transaction command (BEGIN, COMMIT, ROLLBACK, ...)',
  DeclareCursorStmt: 'DECLARE',
  ClosePortalStmt: 'CLOSE',
  CheckPointStmt: 'CHECKPOINT',
  RangeTableSample: 'TABLESAMPLE',
  RangeTableFunc: 'XMLTABLE',
  JsonTable: 'JSON_TABLE',
  XmlExpr: 'XML functions',
  XmlSerialize: 'XMLSERIALIZE',
  ColumnDef: 'a column definition list',
  IntoClause: 'INTO',
  CurrentOfExpr: 'WHERE CURRENT OF',
  SetToDefault: 'DEFAULT',
  'SelectStmt.intoClause': 'INTO',
  'RangeVar.schemaname': 'a schema-qualified relation',
  'RangeVar.catalogname': 'a database-qualified relation',
  'RangeFunction.is_rowsfrom': 'ROWS FROM',
  'RangeFunction.coldeflist': 'a column definition list',
  'CommonTableExpr.search_clause': 'SEARCH',
  'CommonTableExpr.cycle_clause': 'CYCLE',
  'TypeName.setof': 'SETOF',
  'TypeName.pct_type': '%TYPE',
};

export const LOCKING_LABELS: Readonly<Record<string, string>> = {
  LCS_FORKEYSHARE: 'FOR KEY SHARE',
  LCS_FORSHARE: 'FOR SHARE',
  LCS_FORNOKEYUPDATE: 'FOR NO KEY UPDATE',
  LCS_FORUPDATE: 'FOR UPDATE',
};
