// @ts-check
// Plain JavaScript, type-checked from its JSDoc: it runs in the PGlite worker thread, which
// loads no TypeScript loader (worker.mjs says why).
import { parse, protocol } from '@electric-sql/pglite';

/** @typedef {import('@electric-sql/pglite').PGlite} PGlite */
/** @typedef {Record<string, unknown>} Row */

/** Texts kept prepared: plain DML, whose result shape only DDL can change. */
const DML = /^(\s|--[^\n]*\n)*(select|insert|update|delete|with|values)\b/i;
/** Statements that leave the schema alone, so prepared statements stay good. */
const CONTROL = /^(\s|--[^\n]*\n)*(begin|commit|rollback|savepoint|release|start|end|abort)\b/i;
/** Beyond this many, new texts run unprepared (user SQL must not grow memory for good). */
const MAX_PREPARED = 500;

/** @param {...Uint8Array} parts */
const message = (...parts) => {
  const joined = new Uint8Array(parts.reduce((size, part) => size + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.length;
  }
  return joined;
};

/**
 * Runs the service's statements on PGlite as named prepared statements, the way postgres.js
 * does with `prepare: true`. PGlite's own `query` makes six calls into the WebAssembly for each
 * statement (parse, describe, bind, describe, execute, sync: ~100 µs); a statement prepared
 * once then costs one call (bind, describe, execute, sync: ~40 µs). Values are serialized and
 * rows parsed with PGlite's own serializers and parsers, so results are the same as `query`'s.
 * Runs inside the worker thread, one call at a time.
 */
export class PreparedStatements {
  /** @type {Map<string, { name: string; paramTypes: number[] }>} */
  #prepared = new Map();
  #count = 0;
  /** @type {PGlite} */
  #db;

  /** @param {PGlite} db */
  constructor(db) {
    this.#db = db;
  }

  /**
   * @param {string} text
   * @param {readonly unknown[]} [params]
   * @returns {Promise<Row[]>}
   */
  async query(text, params = []) {
    if (!DML.test(text)) {
      this.#schemaMayChange(text);
      return (await this.#db.query(text, /** @type {unknown[]} */ (params))).rows;
    }
    const statement = this.#prepared.get(text) ?? (await this.#prepare(text));
    if (!statement) return (await this.#db.query(text, /** @type {unknown[]} */ (params))).rows;
    const values = params.map((value, i) => {
      if (value === null || value === undefined) return null;
      const serialize = this.#db.serializers[statement.paramTypes[i] ?? 0];
      return serialize ? serialize(value) : String(value);
    });
    try {
      const { messages } = await this.#db.execProtocol(
        message(
          protocol.serialize.bind({ statement: statement.name, values }),
          protocol.serialize.describe({ type: 'P' }),
          protocol.serialize.execute({}),
          protocol.serialize.sync(),
        ),
      );
      return parse.parseResults(messages, this.#db.parsers)[0]?.rows ?? [];
    } catch (error) {
      // 0A000 "cached plan must not change result type": DDL this class did not see (inside a
      // function, say). Prepared again on the next call.
      if (/** @type {{ code?: string }} */ (error).code === '0A000') this.#prepared.delete(text);
      throw error;
    }
  }

  /** @param {string} text */
  async script(text) {
    this.#schemaMayChange(text);
    await this.#db.exec(text);
  }

  /**
   * Prepares `text` under a new name, or says no when too many are kept already.
   * @param {string} text
   */
  async #prepare(text) {
    if (this.#prepared.size >= MAX_PREPARED) return null;
    const name = `agent_service_${++this.#count}`;
    const { messages } = await this.#db.execProtocol(
      message(
        protocol.serialize.parse({ name, text }),
        protocol.serialize.describe({ type: 'S', name }),
        protocol.serialize.sync(),
      ),
    );
    const statement = { name, paramTypes: parse.parseDescribeStatementResults(messages) };
    this.#prepared.set(text, statement);
    return statement;
  }

  /**
   * Anything but DML and transaction control may change the schema (a migration, a DDL
   * statement): prepared statements are then made afresh. The old ones are left allocated,
   * not deallocated, because DEALLOCATE would fail inside a failed transaction; DDL is rare
   * (migrations at start-up), so they cost little.
   * @param {string} text
   */
  #schemaMayChange(text) {
    if (!CONTROL.test(text)) this.#prepared.clear();
  }
}
