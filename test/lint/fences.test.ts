import { join } from 'node:path';
import { ESLint } from 'eslint';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

// The kernel and the capabilities stay apart because lint refuses the imports that would join
// them (FENCES in eslint.config.js); this holds lint to each fence with a probe.
const eslint = new ESLint({ cwd: join(import.meta.dirname, '../..') });

/** What lint says of `imports` as if they were a file at `filePath`: `rule: source` each. */
async function problems(filePath: string, imports: string[]): Promise<string[]> {
  const [result] = await eslint.lintText(imports.join('\n'), { filePath });
  return (result?.messages ?? []).map((m) => `${m.ruleId}: ${/'([^']+)'/.exec(m.message)?.[1]}`);
}

/** Why lint refuses `source` at `filePath`: the messages of its problems. */
async function reasons(filePath: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(`import '${source}';`, { filePath });
  return (result?.messages ?? []).map((m) => m.message);
}

const test = suite('the fences between the kernel and the capabilities');

test('the kernel imports no capability, nor the capability list or the handler table', async () => {
  const found = await problems('actors/kernel/probe.ts', [
    "import '../agents/actor.ts';",
    "import '../files/versions.ts';",
    "import '../capabilities.ts';",
    "import '../handlers.ts';",
    "import './clock.ts';",
    "import '../../storage/driver.ts';",
    "import '../../storage/kernel/changes.ts';",
    "import '../../protocol/errors.ts';",
    "import '../../machines/agent.ts';",
  ]);
  assert.equal(found, [
    'layers/fence: ../agents/actor.ts',
    'layers/fence: ../files/versions.ts',
    'layers/fence: ../capabilities.ts',
    'layers/fence: ../handlers.ts',
    // And the one-runner fence: only server/invoke.ts imports the handler table.
    'layers/fence: ../handlers.ts',
  ]);
  assert.match(
    (await reasons('actors/kernel/probe.ts', '../agents/actor.ts')).join(),
    'imports no capability',
  );
});

test('the fence holds for every way of importing: types, re-exports and import()', async () => {
  const found = await problems('actors/kernel/probe.ts', [
    "import type { AgentActor } from '../agents/actor.ts';",
    "export { CAPABILITIES } from '../capabilities.ts';",
    "export * from '../deals/actor.ts';",
    "export const later = () => import('../feed/feed.ts');",
    'export type { AgentActor };',
  ]);
  assert.equal(found, [
    'layers/fence: ../agents/actor.ts',
    'layers/fence: ../capabilities.ts',
    'layers/fence: ../deals/actor.ts',
    'layers/fence: ../feed/feed.ts',
  ]);
});

test("capability SQL imports only the driver, its errors, the locks, protocol/ and other capabilities' SQL", async () => {
  const found = await problems('storage/probe.ts', [
    "import './driver.ts';",
    "import './database-error.ts';",
    "import './locks.ts';",
    "import '../protocol/errors.ts';",
    "import 'node:crypto';",
    "import './workspaces.ts';",
    "import './kernel/changes.ts';",
    "import './pglite/driver.ts';",
    "import './blobs/blob-store.ts';",
    "import './transaction-guard.ts';",
    "import 'postgres';",
  ]);
  assert.equal(found, [
    'layers/fence: ./kernel/changes.ts',
    'layers/fence: ./pglite/driver.ts',
    'layers/fence: ./blobs/blob-store.ts',
    'layers/fence: ./transaction-guard.ts',
    'layers/fence: postgres',
  ]);
  assert.match((await reasons('storage/probe.ts', './kernel/changes.ts')).join(), 'Capability SQL');
  // The same fence in a capability's own folder (storage/email/).
  assert.equal(
    await problems('storage/email/probe.ts', [
      "import '../driver.ts';",
      "import '../../protocol/errors.ts';",
      "import '../workspaces.ts';",
      "import '../webhooks.ts';",
      "import './notification-emails.ts';",
      "import '../kernel/changes.ts';",
      "import '../blobs/blob-store.ts';",
    ]),
    ['layers/fence: ../kernel/changes.ts', 'layers/fence: ../blobs/blob-store.ts'],
  );
});

test('the driver, the kernel tables and the blob store are not capability SQL', async () => {
  for (const [filePath, source] of [
    ['storage/open.ts', './pglite/driver.ts'],
    ['storage/migrate.ts', './kernel/changes.ts'],
    ['storage/kernel/probe.ts', '../workspaces.ts'],
    ['storage/blobs/probe.ts', './errors.ts'],
  ] as const) {
    assert.equal(await problems(filePath, [`import '${source}';`]), [], filePath);
  }
});

test("a handler file is imported only by its own folder's capability.ts", async () => {
  assert.equal(
    await problems('actors/deals/capability.ts', [
      "import './handlers.ts';",
      "import '../store/handlers.ts';",
    ]),
    ['layers/fence: ../store/handlers.ts'],
  );
  assert.equal(
    await problems('actors/chat/capability.ts', [
      "import './knock-handlers.ts';",
      "import './message-handlers.ts';",
    ]),
    [],
  );
  assert.equal(
    await problems('actors/store/probe.ts', [
      "import './handlers.ts';",
      "import '../deals/handlers.ts';",
      "import '../chat/knock-handlers.ts';",
    ]),
    [
      'layers/fence: ./handlers.ts',
      'layers/fence: ../deals/handlers.ts',
      'layers/fence: ../chat/knock-handlers.ts',
    ],
  );
  assert.equal(
    await problems('server/storage-link/probe.ts', [
      "import '../../actors/files/storage-link-handlers.ts';",
      "import '../../actors/files/handlers.ts';",
    ]),
    [
      'layers/fence: ../../actors/files/storage-link-handlers.ts',
      'layers/fence: ../../actors/files/handlers.ts',
    ],
  );
  assert.match(
    (await reasons('actors/store/probe.ts', '../deals/handlers.ts')).join(),
    "only by its own folder's capability.ts",
  );
});

test('only server/invoke.ts imports the handler table: one runner for every door, by every way of importing', async () => {
  const imports = [
    "export { HANDLERS } from '../../actors/handlers.ts';",
    "export const later = () => import('../../actors/handlers.ts');",
  ];
  assert.equal(await problems('server/invoke.ts', imports), []);
  for (const elsewhere of ['server/email/probe.ts', 'server/http/probe.ts']) {
    assert.equal(await problems(elsewhere, imports), [
      'layers/fence: ../../actors/handlers.ts',
      'layers/fence: ../../actors/handlers.ts',
    ]);
  }
  assert.equal(
    await problems('actors/email/probe.ts', [
      "export const later = () => import('../handlers.ts');",
    ]),
    ['layers/fence: ../handlers.ts'],
  );
});

test('the doors import of actors/ only the kernel, the capability list and what a door names (the handler table: server/invoke.ts alone, above)', async () => {
  const found = await problems('server/http/probe.ts', [
    "import '../../actors/kernel/services.ts';",
    "import '../../actors/capabilities.ts';",
    "import '../../actors/feed/feed.ts';",
    "import '../../actors/files/storage-links.ts';",
    "import '../../actors/workspaces/access.ts';",
    "import '../../actors/agents/operator.ts';",
    "import '../../actors/index/setup.ts';",
    "import '../../actors/receipts/signing-keys.ts';",
    "import '../../actors/workspaces/invites.ts';",
  ]);
  assert.equal(found, [
    'layers/fence: ../../actors/agents/operator.ts',
    'layers/fence: ../../actors/index/setup.ts',
    'layers/fence: ../../actors/receipts/signing-keys.ts',
    'layers/fence: ../../actors/workspaces/invites.ts',
  ]);
  assert.match(
    (await reasons('server/app.ts', '../actors/agents/operator.ts')).join(),
    'a new capability touches nothing in server/',
  );
});

test('the layers still point one way beside the fences', async () => {
  assert.equal(
    await problems('server/http/probe.ts', [
      "import '../../storage/kernel/changes.ts';",
      "import '../../storage/open.ts';",
    ]),
    [
      'no-restricted-imports: ../../storage/kernel/changes.ts',
      'no-restricted-imports: ../../storage/open.ts',
    ],
  );
  assert.equal(await problems('server/app.ts', ["import '../storage/open.ts';"]), []);
  assert.equal(await problems('storage/probe.ts', ["import '../actors/kernel/clock.ts';"]), [
    'no-restricted-imports: ../actors/kernel/clock.ts',
    'layers/fence: ../actors/kernel/clock.ts',
  ]);
});

test.run();
