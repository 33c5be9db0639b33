import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/**
 * The console: a single-page app built into dist/console, which the server serves at /console
 * (src/http/console.ts). `npx vite --config console/vite.config.ts` serves it for development,
 * passing API calls to a server on 127.0.0.1:8080.
 */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  plugins: [react()],
  // The SDK's sources (the client package), as the server's tsconfig paths resolve #client/*.
  resolve: {
    alias: [{ find: /^#client\/(.*)\.js$/, replacement: fileURLToPath(new URL('../clients/typescript/src/$1.ts', import.meta.url)) }],
  },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    // Hashed names under assets/: the server gives them a long immutable cache lifetime.
    assetsDir: 'assets',
  },
  server: {
    proxy: { '/api': 'http://127.0.0.1:8080', '/core': 'http://127.0.0.1:8080' },
  },
});
