import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import reactHooks from 'eslint-plugin-react-hooks';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'clients/typescript/dist/**', 'node_modules/**', 'data/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': ['error', { allow: ['error', 'warn'] }],
      eqeqeq: ['error', 'smart'],
      // The database interface is the union of domain table interfaces, declared by extension.
      '@typescript-eslint/no-empty-object-type': ['error', { allowInterfaces: 'always' }],
    },
  },
  {
    // Kysely stays in db/ and the stores (house style: services never see it). Elsewhere a
    // transaction is an opaque Tx (kernel/tx.js) that is only passed on: db/tx.js, the helpers
    // that turn a Tx back into a Kysely handle, is for stores.
    // `Db`, the schema and the SQL helpers (dialect capabilities included) are for stores only;
    // tables.ts declares columns with Kysely's types.
    files: ['src/**/*.ts'],
    ignores: ['src/db/**', 'src/**/store.ts', 'src/**/*-store.ts', 'src/**/tables.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['kysely'], message: 'Kysely belongs in db/ and store.ts; pass a Tx (kernel/tx.js) instead.' },
            {
              group: ['**/db/database.js'],
              importNames: ['Db'],
              message: 'A Kysely handle belongs in db/ and store.ts; pass a Tx (kernel/tx.js) instead.',
            },
            {
              group: ['**/db/schema.js', '**/db/capabilities.js', '**/db/paginate.js', '**/db/statements.js', '**/db/bulk-insert.js'],
              message: 'SQL and dialect details belong in db/ and store.ts.',
            },
            {
              group: ['**/clients/**'],
              message:
                'The server takes the client package\'s sources through #client/* (package.json "imports"), which resolves to its build at run time.',
            },
            {
              group: ['**/db/tx.js'],
              message: 'Outside db/ and store.ts a Tx (kernel/tx.js) is only passed on: dbOf, atomically and the like are for stores.',
            },
          ],
        },
      ],
    },
  },
  {
    // The client package (clients/typescript) is installed on its own: it imports its own files
    // and its few dependencies, never the server (the server imports it, through #client/*).
    files: ['clients/typescript/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['../*', '#*'],
              message: 'The client package imports only its own files (./…) and its dependencies, nothing of the server.',
            },
            {
              group: ['@sinclair/typebox', 'fastify', 'kysely'],
              message: 'The client package does not depend on the server or its libraries.',
            },
          ],
        },
      ],
    },
  },
  {
    // Tests read JSON responses whose shape the assertions themselves check.
    files: ['test/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The console (a browser app): React's rules of hooks, with exhaustive dependencies an error.
    files: ['console/**/*.{ts,tsx}'],
    ...reactHooks.configs.flat['recommended-latest'],
    rules: { ...reactHooks.configs.flat['recommended-latest'].rules, 'react-hooks/exhaustive-deps': 'error' },
  },
  {
    files: ['src/cli.ts', 'src/cli/**', 'bench/**', 'examples/**'],
    rules: { 'no-console': 'off' },
  },
  // Layout is Prettier's (npm run format); ESLint keeps to correctness.
  prettier,
);
