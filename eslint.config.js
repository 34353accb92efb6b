// Lint keeps the layers honest (docs/architecture.md, "The house"): machines/ and protocol/
// hold no I/O, machines/ are pure functions of their input, and imports point one way:
// server -> actors -> machines, actors -> storage, and everyone may import protocol. Inside
// the layers, fences keep the kernel and the capabilities apart (FENCES below).
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const noIo = {
  group: [
    'node:*',
    'fs',
    'fs/*',
    'net',
    'http',
    'https',
    'http2',
    'tls',
    'dns',
    'dgram',
    'child_process',
    'worker_threads',
    'cluster',
    'os',
    'crypto',
    'process',
    'timers',
    'timers/*',
    'perf_hooks',
    'postgres',
    '@electric-sql/*',
    'socket.io*',
  ],
  message: 'machines/ and protocol/ hold no I/O: effects live in actors/, storage/ or server/.',
};

/** An import pattern refused with the reason the layers give. */
const layer = (group, message) => ({ group, message });

const pointsOneWay =
  'Imports point one way: server -> actors -> machines, actors -> storage; all may import protocol.';

/** Globals that read the world or act on it: machines/ get time and chance as input instead. */
const impureGlobals = [
  ...['Date', 'performance'].map((name) => ({
    name,
    message:
      'machines/ are pure: take the time as input or in the event. actors/ read it from their Clock (and give xstate actors that clock for `after` delays).',
  })),
  ...[
    'setTimeout',
    'setInterval',
    'setImmediate',
    'clearTimeout',
    'clearInterval',
    'clearImmediate',
    'queueMicrotask',
  ].map((name) => ({
    name,
    message:
      'machines/ are pure: no timers. Use xstate `after` delays (run on the clock actors/ supply) or schedule in actors/.',
  })),
  ...['fetch', 'WebSocket', 'XMLHttpRequest', 'process', 'crypto', 'globalThis', 'global'].map(
    (name) => ({
      name,
      message:
        'machines/ are pure: no I/O, environment or randomness; effects are named actions that actors/ provide.',
    }),
  ),
];

/** The repository's root: fences name files by their path from here. */
const ROOT = dirname(fileURLToPath(import.meta.url));

/** A path glob as a RegExp: `**` any run of characters, `*` any within one path segment. */
const glob = (pattern) =>
  new RegExp(
    `^${pattern
      .split('**')
      .map((part) =>
        part
          .split('*')
          .map((text) => text.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
          .join('[^/]*'),
      )
      .join('.*')}$`,
  );

const matchesAny = (patterns, path) => patterns.some((pattern) => glob(pattern).test(path));

/** The product's code: the fences hold there (bench/ and test/ may reach in to measure). */
const PRODUCT = ['actors/**', 'machines/**', 'protocol/**', 'server/**', 'storage/**'];

/** Where a handler file lives: each capability's handlers.ts and its `*-handlers.ts`. */
const HANDLER_FILES = ['actors/*/handlers.ts', 'actors/*/*-handlers.ts'];

/** The modules of capability SQL: storage/<capability>.ts and storage/<capability>/. */
const CAPABILITY_SQL = ['storage/*.ts', 'storage/*/*.ts'];
/** What storage/ holds that is not a capability's SQL: drivers, the kernel's tables, blobs. */
const NOT_CAPABILITY_SQL = [
  'storage/pglite/**',
  'storage/postgres/**',
  'storage/kernel/**',
  'storage/blobs/**',
  'storage/driver.ts',
  'storage/open.ts',
  'storage/migrate.ts',
  'storage/database-error.ts',
  'storage/transaction-guard.ts',
  'storage/locks.ts',
];

/**
 * The fences between the kernel and the capabilities. A file of `files` (not of `filesExcept`)
 * may not import what `refuses` names unless `allows` names it too (or `allowsWhen` says so
 * for the pair). What is imported is named by its path from the root (`storage/driver.ts`),
 * or as written for a package (`zod`, `node:crypto`). test/lint/fences.test.ts holds each fence
 * to a probe.
 */
const FENCES = [
  {
    files: ['actors/kernel/**'],
    refuses: ['actors/**'],
    allows: ['actors/kernel/**'],
    message:
      'actors/kernel/ imports no capability (nothing of actors/ outside the kernel): every capability relies on the kernel, so it relies on none of them. A capability plugs itself in through its capability.ts and actors/capabilities.ts.',
  },
  {
    // Capability SQL: the top-level files of storage/ (a capability with one file) and each
    // capability's own folder (storage/<capability>/), except the driver's and the kernel's own.
    files: CAPABILITY_SQL,
    filesExcept: NOT_CAPABILITY_SQL,
    refuses: ['**'],
    allows: [
      'storage/driver.ts',
      'storage/database-error.ts',
      'storage/locks.ts',
      'protocol/**',
      'node:*',
    ],
    // Another capability's readers and SQL fragments (each capability's SQL names only its own
    // tables: test/lint/capability-tables.test.ts), and its own folder's other files; the
    // capability graph (test/lint/capability-graph.test.ts) keeps these imports free of cycles.
    allowsWhen: (_importer, imported) =>
      matchesAny(CAPABILITY_SQL, imported) && !matchesAny(NOT_CAPABILITY_SQL, imported),
    message:
      "Capability SQL (storage/<capability>.ts, or storage/<capability>/ where a capability has several files) imports only storage/driver.ts, storage/database-error.ts, storage/locks.ts, protocol/ and other capabilities' SQL (their exported readers): it knows its capability's tables, not a driver nor the kernel's tables.",
  },
  {
    files: PRODUCT,
    refuses: HANDLER_FILES,
    // actors/<capability>/capability.ts, beside the handler file.
    allowsWhen: (importer, imported) => importer === `${dirname(imported)}/capability.ts`,
    message:
      "A handler file is imported only by its own folder's capability.ts, and the handler table (actors/handlers.ts) reads it from the capability list. No door and no domain module imports a handler: what they share lives in a module of the capability.",
  },
  {
    // One runner: every door runs an operation through server/invoke.ts `run()` (its decoding,
    // bounds, token scopes and strict checks); a second caller of the table would skip them.
    files: PRODUCT,
    refuses: ['actors/handlers.ts'],
    allows: [],
    allowsWhen: (importer) => importer === 'server/invoke.ts',
    message:
      "The handler table (actors/handlers.ts) is imported only by server/invoke.ts: every door and every confirmation runs an operation through its run(), so the decoding, bounds, token scopes and strict checks hold for all. A capability that must run an operation later (a mail command confirmed by its link) is given the door's runner (services.confirmedRunner).",
  },
  {
    files: ['server/**'],
    refuses: ['actors/**'],
    allows: [
      'actors/kernel/**',
      'actors/capabilities.ts',
      'actors/handlers.ts',
      'actors/feed/**',
      'actors/files/**',
      'actors/workspaces/access.ts',
      'actors/email/**',
      'actors/workspaces/email-invites.ts',
      'actors/workspaces/email-invite-replies.ts',
    ],
    message:
      'The doors import of actors/ only the kernel, actors/capabilities.ts, actors/handlers.ts and the capability modules a door needs by name (actors/feed/ for the socket door, actors/files/ and actors/workspaces/access.ts for the storage-link door, actors/email/ and the email-invite modules of actors/workspaces/ for the SMTP door): start-up steps, jobs and actor kinds come from the capability list, so a new capability touches nothing in server/.',
  },
];

/** What `source`, imported by the file at `importer`, names: its path from the root, or itself. */
function imported(importer, source) {
  if (!source.startsWith('.')) return source;
  return join(dirname(importer), source).split(sep).join('/');
}

/** The ESLint rule `layers/fence`: each import checked against every fence. */
const fence = {
  meta: {
    type: 'problem',
    docs: { description: 'Keeps the kernel and the capabilities apart (FENCES).' },
    schema: [],
    messages: { refused: "'{{source}}' is refused here. {{why}}" },
  },
  create(context) {
    const importer = relative(ROOT, context.filename).split(sep).join('/');
    const fences = FENCES.filter(
      (f) => matchesAny(f.files, importer) && !matchesAny(f.filesExcept ?? [], importer),
    );
    if (fences.length === 0) return {};
    const check = (node) => {
      if (typeof node?.value !== 'string') return;
      const path = imported(importer, node.value);
      for (const f of fences) {
        if (!matchesAny(f.refuses, path)) continue;
        if (matchesAny(f.allows ?? [], path) || f.allowsWhen?.(importer, path)) continue;
        context.report({
          node,
          messageId: 'refused',
          data: { source: node.value, why: f.message },
        });
      }
    };
    return {
      ImportDeclaration: (node) => check(node.source),
      ExportNamedDeclaration: (node) => check(node.source),
      ExportAllDeclaration: (node) => check(node.source),
      ImportExpression: (node) => check(node.source),
    };
  },
};

export default tseslint.config(
  { ignores: ['node_modules/**', 'build/**', 'data/**', '.test-data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['machines/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [noIo, layer(['**/storage/**', '**/server/**', '**/actors/**'], pointsOneWay)],
        },
      ],
      'no-restricted-globals': ['error', ...impureGlobals],
      'no-restricted-properties': [
        'error',
        {
          object: 'Math',
          property: 'random',
          message: 'machines/ are pure: chance comes in the input or the event, drawn by actors/.',
        },
      ],
    },
  },
  {
    files: ['protocol/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            noIo,
            layer(
              ['**/storage/**', '**/server/**', '**/actors/**', '**/machines/**'],
              `${pointsOneWay} protocol/ imports only protocol/.`,
            ),
          ],
        },
      ],
    },
  },
  {
    files: ['actors/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [layer(['**/server/**'], `${pointsOneWay} A door calls actors, not back.`)] },
      ],
    },
  },
  {
    files: ['storage/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            layer(
              ['**/server/**', '**/actors/**', '**/machines/**'],
              `${pointsOneWay} storage/ knows SQL, not who calls it.`,
            ),
          ],
        },
      ],
    },
  },
  {
    files: ['server/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            layer(
              ['**/storage/**'],
              `${pointsOneWay} The doors reach storage through actors/ (a handler, Services).`,
            ),
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.{ts,mjs}'],
    plugins: { layers: { rules: { fence } } },
    rules: { 'layers/fence': 'error' },
  },
  {
    // The one exception: start-up opens the storage driver (PGlite or PostgreSQL, by config)
    // and hands it to actors/. Nothing else of storage/ is for the doors.
    files: ['server/main.ts', 'server/app.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            layer(
              ['**/storage/**', '!**/storage/open.ts'],
              `${pointsOneWay} Start-up may import storage/open.ts only, to open the driver.`,
            ),
          ],
        },
      ],
    },
  },
);
