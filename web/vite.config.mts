import { defineConfig } from 'vite';

/**
 * The console's build: hashed files under /assets/ (served with a year of immutable caching), an index.html
 * without inline script or style (the Content-Security-Policy allows neither), nothing fetched from elsewhere.
 */
export default defineConfig({
  base: '/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  resolve: { alias: { react: 'preact/compat', 'react-dom': 'preact/compat' } },
  build: {
    outDir: '../dist/web',
    emptyOutDir: true,
    assetsDir: 'assets',
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: false,
  },
});
