// Lint keeps the layers honest: machines/ and protocol/ stay free of I/O.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const noIo = {
  patterns: [
    {
      group: ['node:*', 'fs', 'net', 'http', 'postgres', '@electric-sql/*', 'socket.io*'],
      message: 'machines/ and protocol/ hold no I/O: effects live in actors/, storage/ or server/.',
    },
    { group: ['**/storage/**', '**/server/**', '**/actors/**'], message: 'Imports point one way.' },
  ],
};

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
    files: ['machines/**/*.ts', 'protocol/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', noIo] },
  },
);
