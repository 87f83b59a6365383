// One list of the API (lib/exports.js): the CommonJS and ESM entry points and both
// backends export exactly those names.
import test from 'ava'
import { createRequire } from 'node:module'
import { execFileSync } from 'node:child_process'
import * as esmEntry from '../index.mjs'

const require = createRequire(import.meta.url)
const names = require('../lib/exports.js')
const sorted = (list) => [...list].sort()

test('require("fairfs") has backend, nativeError and the listed API, each defined', (t) => {
  const cjs = require('../index.js')
  t.deepEqual(Object.keys(cjs), ['backend', 'nativeError', ...names])
  for (const name of names) t.not(cjs[name], undefined, name)
})

test('import "fairfs" (index.mjs) names the same exports as the CommonJS entry, plus default', (t) => {
  t.deepEqual(sorted(Object.keys(esmEntry)), sorted(['default', 'backend', 'nativeError', ...names]))
  const cjs = require('../index.js')
  for (const name of names) t.is(esmEntry[name], cjs[name], name)
  t.is(esmEntry.default, cjs)
})

test('the native and the node backend each provide exactly the listed API', (t) => {
  const native = require('../lib/native-api.js')
  const fallback = require('../lib/fallback.js')
  t.deepEqual(sorted(Object.keys(native)), sorted(names))
  t.deepEqual(sorted(Object.keys(fallback)), sorted(names))
})

test('under FAIRFS_BACKEND=node the entry points export the same names', (t) => {
  const script = `
    const cjs = require(${JSON.stringify(require.resolve('../index.js'))})
    import(${JSON.stringify(new URL('../index.mjs', import.meta.url).href)}).then((esm) => {
      console.log(JSON.stringify({ backend: cjs.backend, cjs: Object.keys(cjs), esm: Object.keys(esm) }))
    })`
  const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { env: { ...process.env, FAIRFS_BACKEND: 'node' } }).toString())
  t.is(out.backend, 'node')
  t.deepEqual(out.cjs, ['backend', 'nativeError', ...names])
  t.deepEqual(sorted(out.esm), sorted(['default', 'backend', 'nativeError', ...names]))
})
