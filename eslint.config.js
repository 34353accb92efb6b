// Lint keeps the layers honest (ARCHITECTURE.md, "The house"): machines/ and protocol/ hold
// no I/O, machines/ are pure functions of their input, and imports point one way:
// server -> actors -> machines, actors -> storage, and everyone may import protocol.
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

export default tseslint.config(
  { ignores: ['node_modules/**', 'data/**', '.test-data/**'] },
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
