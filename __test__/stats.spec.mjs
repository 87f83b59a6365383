// stats() and configure() as documented: the fields index.d.ts declares are exactly
// the ones stats() returns, and the options it declares are the ones configure() takes.
import test from 'ava'
import fs from 'node:fs'
import { fairfs, nativeOnly } from './helpers.mjs'

const types = fs.readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8')

/** The field names of `interface name { ... }` in index.d.ts (one level deep). */
function declared(name) {
  const body = types.slice(types.indexOf(`export interface ${name} {`))
  const end = body.indexOf('\n}')
  const fields = [...body.slice(0, end).matchAll(/^ {2}(\w+)\??:/gm)].map((m) => m[1])
  return fields.sort()
}

/** The field names of `pool: { ... }` inside NativeStats. */
function declaredPool() {
  const body = types.slice(types.indexOf('export interface NativeStats {'))
  const pool = body.slice(body.indexOf('  pool: {'), body.indexOf('\n  }', body.indexOf('  pool: {')))
  return [...pool.matchAll(/^ {4}(\w+)\??:/gm)].map((m) => m[1]).sort()
}

nativeOnly(test)('stats() returns exactly the fields index.d.ts declares for NativeStats, and pool the ones it declares there', (t) => {
  const stats = fairfs.stats()
  t.deepEqual(Object.keys(stats).sort(), declared('NativeStats'))
  t.deepEqual(Object.keys(stats.pool).sort(), declaredPool())
  t.true(declaredPool().length >= 7, 'the pool fields were found in index.d.ts')
})

nativeOnly(test)('awaitingMemory counts big reads waiting for memory their thread lends: none when idle', (t) => {
  t.is(fairfs.stats().awaitingMemory, 0)
})

test('every option index.d.ts declares for configure() is one configure() checks', (t) => {
  const options = declared('ConfigureOptions')
  t.true(options.length >= 10, 'options were found in index.d.ts')
  for (const option of options) {
    const value = option === 'fastPath' ? 'yes' : 1.5 // no option takes a fraction
    const err = t.throws(() => fairfs.configure({ [option]: value }), undefined, option)
    t.regex(err.message, new RegExp(`"options\\.${option}"`), `${option} is checked by name`)
  }
})
