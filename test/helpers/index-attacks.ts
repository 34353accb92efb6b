import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from './server.ts';
import { newWorkspace, saveFile, type TestAgent } from './workspaces.ts';

/**
 * Attacks on POST /index/sql through the real HTTP door, each with the layer that stops it:
 * the input schema, the SQL policy (actors/index/sql-policy.ts), the scope views
 * (storage/migrations/008_index_scope.sql), PostgreSQL itself (read-only transaction, the
 * reader role, its own errors), the time limit and the row cap (actors/index/queries.ts).
 * An attack marked `hole` is one no layer stops today: its test fails until it is closed.
 */

export type Param = string | number | boolean | null;
export type Scope = 'own' | 'public' | 'store';

/** The agents and files every attack runs against. */
export interface World {
  attacker: TestAgent;
  victim: TestAgent;
  /** The victim's private workspace, holding VICTIM_FILE at VICTIM_PATH. */
  victimWorkspace: string;
}

/** What "stopped" means at each layer. */
export type Stop =
  /** The operation's input schema: 400 invalid_input naming the field (`sql` unless named), before any SQL is read. */
  | { layer: 'input'; field?: string }
  /** The SQL policy: 400 sql_not_allowed, naming what it refused. */
  | { layer: 'policy'; refused: string }
  /** Not an attack after all: the text is one plain SELECT, and exactly these rows come back. */
  | { layer: 'inert'; rows: unknown[][] }
  /** The scope views: 200, and the rows are exactly these (nothing out of the caller's reach). */
  | { layer: 'scope'; rows: unknown[][] }
  /** PostgreSQL refused it at run time: 400 invalid_input with its reason. */
  | { layer: 'database'; failure: RegExp }
  /** PostgreSQL ran out of what it gives one query: 400 sql_too_complex with its reason. */
  | { layer: 'limits'; failure: RegExp }
  /** The time limit: 408 sql_timeout. */
  | { layer: 'timeout' }
  /** The row cap: 200 with exactly 1,000 rows and truncated. */
  | { layer: 'cap' }
  /**
   * One value past the answer's byte bound, built about when the time limit comes: 408
   * sql_timeout, or 200 with no rows and truncated, whichever the machine reaches first.
   */
  | { layer: 'bounded' };

export interface Attack {
  /** What the attacker tries: the subject of the test's sentence. */
  tries: string;
  sql: string;
  params?: (world: World) => Param[];
  scope?: Scope;
  stop: Stop;
  /** No layer stops it today; the report describes it. The test fails until it is closed. */
  hole?: true;
}

export const INPUT: Stop = { layer: 'input' };
export const TIMEOUT: Stop = { layer: 'timeout' };
export const CAP: Stop = { layer: 'cap' };
export const BOUNDED: Stop = { layer: 'bounded' };
export const policy = (refused: string): Stop => ({ layer: 'policy', refused });
export const inert = (rows: unknown[][]): Stop => ({ layer: 'inert', rows });
export const scope = (rows: unknown[][]): Stop => ({ layer: 'scope', rows });
export const database = (failure: RegExp): Stop => ({ layer: 'database', failure });
export const limits = (failure: RegExp): Stop => ({ layer: 'limits', failure });

export const VICTIM_PATH = 'private/notes.md';
/** A file whose values an attacker would love to learn, and whose header makes probes fail. */
export const VICTIM_FILE =
  '---\nname: hunter2\nsecret: 0\ncity: Berlin\nprice: 0\n---\nThe safe code is 4711.\n';

/** An answer of POST /index/sql: rows, or a refusal. */
export type Answer = {
  status: number;
  body: {
    columns?: { name: string; type: string }[];
    rows?: unknown[][];
    truncated?: boolean;
    code?: string;
    detail?: string;
    refused?: string;
    issues?: unknown[];
    field?: string;
  };
};

/** Runs `body` as `agent` through POST /index/sql. */
export async function sql(
  server: TestServer,
  agent: TestAgent,
  body: { sql: string; scope?: Scope; params?: Param[] },
): Promise<Answer> {
  const response = await server.post('/index/sql', body, agent.api_token);
  return { status: response.status, body: (await response.json()) as Answer['body'] };
}

/** The parts of an answer that say something about the data (elapsed_ms is left out). */
export const meaning = ({ status, body }: Answer) => ({
  status,
  code: body.code,
  detail: body.detail,
  rows: body.rows,
  truncated: body.truncated,
});

/** What a test's name says of the layer that stops its attack. */
export const STOPPED_BY: Record<Stop['layer'], string> = {
  input: 'is refused by the input schema (400 invalid_input)',
  policy: 'is refused by the SQL policy (400 sql_not_allowed)',
  inert: 'runs as the one harmless SELECT it is, and nothing else',
  scope: 'answers nothing out of reach, held by the scope views',
  database: 'is refused by PostgreSQL at run time (400 invalid_input)',
  limits: 'is refused by PostgreSQL as past its limits (400 sql_too_complex)',
  timeout: 'is stopped by the time limit (408 sql_timeout)',
  cap: 'is stopped by the row cap (1,000 rows, truncated)',
  bounded:
    "is stopped by the time limit (408 sql_timeout) or the answer's byte bound (no rows, truncated), whichever it reaches first",
};

/** Fails the test unless `answer` shows the attack stopped as `stop` says. */
export function assertStopped(answer: Answer, stop: Stop, label: string): void {
  const shown = `${label}: ${JSON.stringify(answer.body).slice(0, 400)}`;
  switch (stop.layer) {
    case 'input':
      assert.is(answer.status, 400, shown);
      assert.is(answer.body.code, 'invalid_input', shown);
      assert.is(answer.body.field, stop.field ?? 'sql', shown);
      assert.ok(Array.isArray(answer.body.issues), shown);
      return;
    case 'policy':
      assert.is(answer.status, 400, shown);
      assert.is(answer.body.code, 'sql_not_allowed', shown);
      assert.is(answer.body.refused, stop.refused, shown);
      return;
    case 'inert':
    case 'scope':
      assert.is(answer.status, 200, shown);
      assert.equal(answer.body.rows, stop.rows, shown);
      assert.is(answer.body.truncated, false, shown);
      return;
    case 'database':
      assert.is(answer.status, 400, shown);
      assert.is(answer.body.code, 'invalid_input', shown);
      assert.match(answer.body.detail ?? '', /^The query failed: /, shown);
      assert.match(answer.body.detail ?? '', stop.failure, shown);
      return;
    case 'limits':
      assert.is(answer.status, 400, shown);
      assert.is(answer.body.code, 'sql_too_complex', shown);
      assert.match(answer.body.detail ?? '', stop.failure, shown);
      return;
    case 'timeout':
      assert.is(answer.status, 408, shown);
      assert.is(answer.body.code, 'sql_timeout', shown);
      return;
    case 'cap':
      assert.is(answer.status, 200, shown);
      assert.is(answer.body.rows?.length, 1000, shown);
      assert.is(answer.body.truncated, true, shown);
      return;
    case 'bounded':
      if (answer.status === 408) {
        assert.is(answer.body.code, 'sql_timeout', shown);
        return;
      }
      assert.is(answer.status, 200, shown);
      assert.equal(answer.body.rows, [], shown);
      assert.is(answer.body.truncated, true, shown);
      return;
  }
}

/**
 * After a timeout PGlite's thread is stopped and a new one started, whose first statement takes
 * about as long as the 300 ms limit: so the next agent query could be stopped in its turn. The
 * service's own `select 1` for /health waits for the new thread and warms it.
 */
export async function databaseBack(server: TestServer): Promise<void> {
  for (let tries = 0; tries < 3; tries++) {
    if ((await server.get('/health')).status === 200) return;
  }
  assert.unreachable('the database did not come back after a timeout');
}

export type AttackContext = { server: TestServer; world: World };

/**
 * A suite that runs each attack as one test by one attacker against a victim's private file,
 * then checks that the file is untouched; the file adds tests of its own before running it.
 */
export function attackSuite(name: string, attacks: readonly Attack[]) {
  const test = suite<AttackContext>(name);
  test.before(async (context) => {
    // One attacker tries every attack, several of which run past the time limit: more than the
    // 3 a minute an agent may (sql-timeouts.test.ts holds that budget).
    context.server = await startTestServer({ sqlTimeoutMs: 300, sqlTimeoutsPerAgent: 20 });
    const { server } = context;
    const victim = await server.signUp();
    const attacker = await server.signUp();
    const victimWorkspace = await newWorkspace(server, victim);
    await saveFile(server, victim, victimWorkspace, VICTIM_PATH, VICTIM_FILE);
    // The scope rows mean something only if the victim's own queries reach what the attacker's miss.
    const own = await sql(server, victim, { sql: 'select path from files' });
    assert.equal(own.body.rows, [[VICTIM_PATH]], JSON.stringify(own.body));
    const axes = await sql(server, victim, {
      sql: 'select axis, value from axis_values order by 1',
    });
    assert.equal(axes.body.rows, [
      ['place', 'Berlin'],
      ['price', '0'],
    ]);
    context.world = { attacker, victim, victimWorkspace };
  });
  test.after(async ({ server }) => {
    await server.close();
  });

  for (const attack of attacks) {
    const name = `${attack.tries} ${STOPPED_BY[attack.stop.layer]}${
      attack.hole ? ' (a known hole: today it is not)' : ''
    }`;
    test(name, async ({ server, world }) => {
      const answer = await sql(server, world.attacker, {
        sql: attack.sql,
        ...(attack.scope ? { scope: attack.scope } : {}),
        ...(attack.params ? { params: attack.params(world) } : {}),
      });
      assertStopped(answer, attack.stop, attack.hole ? `HOLE: ${attack.tries}` : attack.tries);
      if (answer.status === 408) await databaseBack(server);
    });
  }

  test("After every attack the victim's file is still there, unchanged", async ({
    server,
    world,
  }) => {
    const answer = await sql(server, world.victim, {
      sql: 'select path, version, body from file_versions',
    });
    assert.is(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.rows, [[VICTIM_PATH, 1, 'The safe code is 4711.\n']]);
  });
  return test;
}
