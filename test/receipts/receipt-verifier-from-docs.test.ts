import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { signReceipt } from '../../actors/receipts/receipts.ts';
import { jwkOf, kidOf, rawPublicKey } from '../../actors/receipts/signing-keys.ts';
import { codeBlock, runProgram } from '../helpers/document-programs.ts';
import { agreeAll, dealRoom, deliver, rate } from '../helpers/deals.ts';
import { callJson } from '../helpers/http.ts';
import { jwksOf, type Jwks } from '../helpers/receipt-chain.ts';
import { onTestsEnd } from '../helpers/resources.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import type { Agent, Receipt } from '../helpers/wire-types.ts';
import { deleteFile, saveFile } from '../helpers/workspaces.ts';

/**
 * Receipts anyone can check (issue 33, item 6): the two verifiers of /deals/protocol, written to
 * files exactly as served and run as programs (node, python3) as a reader who pasted them would,
 * verify every receipt of a real workspace (file saves and a delete, a deal agreed, delivered and
 * rated, an off-chain payment confirmed, a key rotated midway) across pages of list_receipts,
 * and exit 1 naming the receipt that fails in a tampered copy.
 */

/** The first line of each verifier's code block in /deals/protocol: how the test finds it. */
const NODE_MARKER = '// verify-receipts.mjs';
const PYTHON_MARKER = '#!/usr/bin/env python3\n# verify_receipts.py';
/** More file saves than one page of list_receipts holds by default (50), so the verifiers page. */
const NOTES = 52;

interface Verifier {
  language: 'node' | 'python';
  /** The command and the verifier's file; null with `skipped` when it cannot run here. */
  command: [string, string] | null;
  skipped: string | null;
}

interface Context {
  server: TestServer;
  dir: string;
  verifiers: Verifier[];
  owner: Agent;
  workspaceId: string;
  /** Every receipt of the workspace as list_receipts serves them, newest first. */
  receipts: Receipt[];
  jwks: Jwks;
  retiredKid: string;
}

interface Run {
  code: number | null;
  lines: string[];
  stderr: string;
}

const test = suite<Context>('the receipt verifiers of /deals/protocol, run as served');

/** Why python3 cannot run the Python verifier here, or null when it can. */
function pythonMissing(): string | null {
  const probe = spawnSync('python3', ['-c', 'import cryptography'], { encoding: 'utf8' });
  if (probe.error) return `python3 is not installed (${probe.error.message})`;
  if (probe.status !== 0) return `python3 has no cryptography package: ${probe.stderr.trim()}`;
  return null;
}

/** Runs a verifier to its end: its exit code and what it printed, one line per receipt. */
async function run(
  verifier: Verifier,
  args: string[],
  env: Record<string, string> = {},
): Promise<Run> {
  const [command, file] = verifier.command as [string, string];
  const { code, stdout, stderr } = await runProgram(command, [file, ...args], env);
  return { code, lines: stdout.trimEnd().split('\n'), stderr };
}

/** Each verifier that can run here; says which is skipped and why (never silently). */
function runnable(verifiers: Verifier[]): Verifier[] {
  for (const verifier of verifiers) {
    if (verifier.skipped)
      console.log(`  skipped the ${verifier.language} verifier: ${verifier.skipped}`);
  }
  return verifiers.filter((verifier) => verifier.command !== null);
}

/** Saved copies so far: each gets files of its own. */
let savedCopies = 0;

/** Runs `verifier` offline on a saved list_receipts answer and JWKS. */
function runOffline(context: Context, verifier: Verifier, receipts: unknown[], jwks: unknown) {
  const stamp = `${verifier.language}-${++savedCopies}`;
  const receiptsFile = join(context.dir, `receipts-${stamp}.json`);
  const keysFile = join(context.dir, `service-keys-${stamp}.json`);
  writeFileSync(receiptsFile, JSON.stringify({ receipts, next_cursor: null }));
  writeFileSync(keysFile, JSON.stringify(jwks));
  return run(verifier, [receiptsFile, keysFile]);
}

/** Every receipt of the workspace through list_receipts, page after page, newest first. */
async function listAll(server: TestServer, agent: Agent, workspaceId: string) {
  const receipts: Receipt[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const query: string = cursor ? `?cursor=${encodeURIComponent(cursor)}` : '';
    const page = await callJson<{ receipts: Receipt[]; next_cursor: string | null }>(
      server,
      'GET',
      `/workspaces/${workspaceId}/receipts${query}`,
      agent.api_token,
    );
    assert.is(page.status, 200, JSON.stringify(page.body));
    receipts.push(...page.body.receipts);
    cursor = page.body.next_cursor;
    pages += 1;
  } while (cursor);
  return { receipts, pages };
}

/** What a verifier prints for the receipt at `index` (oldest first, from 0) when it holds. */
const okLine = (receipt: Receipt, index: number) =>
  new RegExp(`^ok +#${index + 1} ${receipt.receipt_id} `);

/** The next double above `x` (positive): a number one unit in the last place off. */
function nextUp(x: number): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  view.setBigUint64(0, view.getBigUint64(0) + 1n);
  return view.getFloat64(0);
}

/** Asserts that `result` failed at the receipt at `index` (oldest first, from 0) for `reason`. */
function assertFailsAt(
  result: Run,
  receipts: Receipt[],
  index: number,
  reason: RegExp,
  what: string,
) {
  const named = receipts[index] as Receipt;
  assert.is(result.code, 1, `${what}: exit code 1 (${result.lines.join('\n')}${result.stderr})`);
  const verdict = result.lines.at(-1) as string;
  assert.match(verdict, new RegExp(`^FAILED: receipt #${index + 1} ${named.receipt_id}: `), what);
  assert.match(verdict.slice(verdict.indexOf(': ', 8) + 2), reason, `${what}: ${verdict}`);
  for (const [before, receipt] of receipts.slice(0, index).entries()) {
    assert.match(
      result.lines[before] as string,
      okLine(receipt, before),
      `${what}: those before hold`,
    );
  }
  assert.match(
    result.lines[index] as string,
    new RegExp(`^FAIL #${index + 1} ${named.receipt_id} `),
  );
}

test.before(async (context) => {
  const server = await startTestServer();
  context.server = server;
  context.dir = mkdtempSync(join(tmpdir(), 'receipt-verifier-'));
  onTestsEnd(async () => rmSync(context.dir, { recursive: true, force: true }));

  const document = await (await server.get('/deals/protocol')).text();
  const nodeFile = join(context.dir, 'verify-receipts.mjs');
  writeFileSync(nodeFile, codeBlock(document, 'js', NODE_MARKER, '/deals/protocol'));
  const pythonFile = join(context.dir, 'verify_receipts.py');
  writeFileSync(pythonFile, codeBlock(document, 'python', PYTHON_MARKER, '/deals/protocol'));
  const missing = pythonMissing();
  context.verifiers = [
    { language: 'node', command: [process.execPath, nodeFile], skipped: null },
    { language: 'python', command: missing ? null : ['python3', pythonFile], skipped: missing },
  ];

  // A workspace with every kind of receipt, through the real doors.
  const { workspaceId, agents, at } = await dealRoom(server);
  const [owner, other] = agents as [Agent, Agent];
  for (let note = 1; note <= NOTES; note++) {
    await saveFile(server, owner, workspaceId, `notes/${note}.md`, `# Note ${note}\n`);
  }
  const dealId = await agreeAll(server, [owner, other], workspaceId, at);
  // Receipts signed before a rotation keep verifying: the JWKS keeps the retired key.
  context.retiredKid = (await server.services.files.signingKeys.current(server.services.db())).kid;
  await server.services.files.signingKeys.rotate(server.services.driver);
  await saveFile(
    server,
    other,
    workspaceId,
    'logo.svg',
    '<svg xmlns="http://www.w3.org/2000/svg"/>',
  );
  const delivered = await deliver(server, other, dealId, ['logo.svg'], 'Livré à temps ✓ 𝄞');
  assert.is(delivered.status, 201, JSON.stringify(delivered.body));
  for (const [rater, ratee] of [
    [owner, other],
    [other, owner],
  ] as const) {
    const rated = await rate(server, rater, dealId, ratee, {
      score: 5,
      comment: 'Très bien « ok »',
    });
    assert.is(rated.status, 201, JSON.stringify(rated.body));
  }
  const recorded = await callJson<{ offchain_payment_id: string }>(
    server,
    'POST',
    '/payments/offchain',
    owner.api_token,
    {
      deal_id: dealId,
      payer_agent_id: owner.agent_id,
      payee_agent_id: other.agent_id,
      amount: '120.00',
      currency: 'EUR',
      means: 'SEPA transfer, reference INV-7',
    },
  );
  assert.is(recorded.status, 201, JSON.stringify(recorded.body));
  const confirmed = await callJson(
    server,
    'POST',
    `/payments/offchain/${recorded.body.offchain_payment_id}/confirm`,
    other.api_token,
    {},
  );
  assert.is(confirmed.status, 200, JSON.stringify(confirmed.body));
  await deleteFile(server, owner, workspaceId, 'notes/1.md');

  const { receipts, pages } = await listAll(server, owner, workspaceId);
  assert.ok(pages > 1, `list_receipts pages (${receipts.length} receipts in ${pages} pages)`);
  const actions = new Set(receipts.map((receipt) => receipt.action));
  for (const action of [
    'save',
    'delete',
    'agree',
    'deliver',
    'rate',
    'offchain_payment_confirmed',
  ]) {
    assert.ok(actions.has(action), `the workspace holds a receipt of ${action}`);
  }
  Object.assign(context, { owner, workspaceId, receipts, jwks: await jwksOf(server) });
  assert.is(context.jwks.keys.length, 2, 'the retired key and the current one');
});

test.after(async ({ server }) => {
  await server.close();
});

test('each verifier, run as served with the service URL, a token and a workspace id, verifies every receipt of a real workspace across pages of list_receipts, oldest first, and exits 0', async (context) => {
  const oldestFirst = [...context.receipts].reverse();
  for (const verifier of runnable(context.verifiers)) {
    const result = await run(verifier, [context.workspaceId], {
      SERVICE_URL: context.server.baseUrl,
      SERVICE_TOKEN: context.owner.api_token,
    });
    const printed = `${verifier.language}: ${result.lines.join('\n')}${result.stderr}`;
    assert.is(result.code, 0, printed);
    assert.is(
      result.lines.length,
      oldestFirst.length + 1,
      `one line per receipt, then the verdict`,
    );
    for (const [index, receipt] of oldestFirst.entries()) {
      assert.match(result.lines[index] as string, okLine(receipt, index), printed);
    }
    assert.is(
      result.lines.at(-1),
      `VERIFIED: ${oldestFirst.length} receipts, one unbroken chain`,
      printed,
    );
  }
});

test('each verifier, offline on a saved copy, verifies it whole, and exits 1 naming the first receipt that was changed (bad signature), follows one removed or moved (broken chain), or is signed by a key the JWKS lacks (unknown kid)', async (context) => {
  const oldestFirst = [...context.receipts].reverse();
  const newestFirst = (list: Receipt[]) => [...list].reverse();
  const deliveryAt = oldestFirst.findIndex((receipt) => receipt.action === 'deliver');
  const rotatedAt = oldestFirst.findIndex((receipt) => receipt.kid !== context.retiredKid);
  assert.ok(deliveryAt > 0 && rotatedAt > 0);
  const changed = oldestFirst.map((receipt, index) =>
    index === deliveryAt ? { ...receipt, note: 'Livré en retard' } : receipt,
  );
  const removed = oldestFirst.filter((_, index) => index !== 10);
  const moved = [...oldestFirst];
  [moved[20], moved[21]] = [moved[21] as Receipt, moved[20] as Receipt];
  const otherKid = oldestFirst.map((receipt, index) =>
    index === rotatedAt
      ? { ...receipt, kid: context.retiredKid.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')) }
      : receipt,
  );
  const withoutRetired = {
    keys: context.jwks.keys.filter((key) => key.kid !== context.retiredKid),
  };
  for (const verifier of runnable(context.verifiers)) {
    const what = (tamper: string) => `${verifier.language}, ${tamper}`;
    const whole = await runOffline(context, verifier, context.receipts, context.jwks);
    assert.is(whole.code, 0, what(`untouched: ${whole.lines.join('\n')}${whole.stderr}`));
    assert.is(whole.lines.at(-1), `VERIFIED: ${oldestFirst.length} receipts, one unbroken chain`);

    const cases: [string, Receipt[], Jwks, number, RegExp][] = [
      ['a field changed', changed, context.jwks, deliveryAt, /^bad signature$/],
      ['one removed from the middle', removed, context.jwks, 10, /^broken chain: /],
      ['two swapped', moved, context.jwks, 20, /^broken chain: /],
      ['a kid the JWKS lacks', otherKid, context.jwks, rotatedAt, /^unknown kid /],
      ['the retired key left out of the JWKS', oldestFirst, withoutRetired, 0, /^unknown kid /],
    ];
    for (const [tamper, list, jwks, index, reason] of cases) {
      const result = await runOffline(context, verifier, newestFirst(list), jwks);
      assertFailsAt(result, list, index, reason, what(tamper));
    }
  }
});

test('each verifier writes RFC 8785 canonical JSON as the service signs it: members in UTF-16 code unit order, numbers in ECMAScript form, strings escaped as JCS does', async (context) => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const kid = kidOf(rawPublicKey(publicKey));
  const key = { kid, privateKey };
  const jwks = { keys: [jwkOf({ kid, publicKey: rawPublicKey(publicKey) })] };
  const workspaceId = '00000000-0000-4000-8000-000000000000';
  const awkward = {
    receipt_id: 'awkward',
    workspace_id: workspaceId,
    action: 'save',
    // U+FB01 sorts after U+1F600 by UTF-16 code units (D83D...), before it by code points.
    '\u{FB01}': 'ligature',
    '\u{1F600}': 'astral',
    é: 'e acute',
    Z: 'upper',
    a: 'lower',
    '': 'empty name',
    numbers: [
      1e21,
      1e20,
      1e-7,
      0.000001,
      0.1,
      0.30000000000000004,
      -0,
      123.456,
      5e-324,
      2 ** 53,
      -1.5e300,
      4.35,
      100,
    ],
    strings: ['\u0000\u0001\b\t\n\f\r\u001f "\\ /', '\u007f\u2028\u2029', 'é𝄞'],
    nested: { b: [true, false, null, { d: 1, c: [] }], a: {} },
  };
  const first = signReceipt(awkward, null, key);
  const second = signReceipt({ ...awkward, receipt_id: 'after', numbers: [0.1 + 0.2] }, first, key);
  const chain = [second, first] as unknown as Receipt[];
  const oneUlpOff = {
    ...first,
    numbers: awkward.numbers.map((n) => (n === 0.1 + 0.2 ? nextUp(n) : n)),
  };
  for (const verifier of runnable(context.verifiers)) {
    const result = await runOffline(context, verifier, chain, jwks);
    assert.is(result.code, 0, `${verifier.language}: ${result.lines.join('\n')}${result.stderr}`);
    const tampered = await runOffline(context, verifier, [second, oneUlpOff], jwks);
    assertFailsAt(
      tampered,
      [oneUlpOff, second] as unknown as Receipt[],
      0,
      /^bad signature$/,
      `${verifier.language}: one number a unit in the last place off`,
    );
  }
});

test('the verifiers need nothing but their runtime and, for Python, cryptography', async (context) => {
  const document = await (await context.server.get('/deals/protocol')).text();
  const node = codeBlock(document, 'js', NODE_MARKER, '/deals/protocol');
  const imports = [...node.matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]);
  assert.ok(imports.length > 0);
  for (const specifier of imports) assert.match(specifier ?? '', /^node:/);
  const python = codeBlock(document, 'python', PYTHON_MARKER, '/deals/protocol');
  const fromImports = [...python.matchAll(/^from (\S+) import/gm)].map((m) => m[1]);
  assert.ok(fromImports.length > 0);
  for (const module of fromImports) assert.match(module ?? '', /^cryptography(\.|$)/);
});

test.run();
