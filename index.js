'use strict'
// fairfs: node:fs-compatible file reads on a fair, bounded native pool.
//
// This file only chooses the backend (lib/backend.js, FAIRFS_BACKEND): the native
// one (lib/native-api.js over the addon) where the addon loads, otherwise node:fs
// itself (lib/fallback.js), so that require('fairfs') works on every platform.

const { choose } = require('./lib/backend')

const { backend, nativeError } = choose()
const api = backend === 'native' ? require('./lib/native-api') : require('./lib/fallback')

const names = require('./lib/exports')

module.exports = {
  /** 'native' (fairfs's pool) or 'node' (node:fs, where the addon did not load or FAIRFS_BACKEND=node). */
  backend,
  /** Why the addon did not load (the backend is then 'node'), or null. */
  nativeError,
}
// The API itself, index.d.ts has each one's type and documentation.
for (const name of names) module.exports[name] = api[name]
// index.d.ts declares a default export (the ESM entry has one), so TypeScript compiled to
// CommonJS without esModuleInterop reads `require('fairfs').default`: it is the module
// itself, as fastify does it. Not enumerable, so that Object.keys() and spreads
// list the API alone; no `__esModule`, so that interop helpers and bundlers keep taking
// the whole module as the default export.
Object.defineProperty(module.exports, 'default', { value: module.exports, writable: true, configurable: true })
