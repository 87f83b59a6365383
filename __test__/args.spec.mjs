// Invalid arguments get node:fs's errors: thrown by the callback form, rejected
// by the promise form, with the same class, code and message.
import test from 'ava'
import fs from 'node:fs'
import { fairfs, isNative, makeFile, bothCallback, bothPromise, viaCallback, viaPromise, describeError } from './helpers.mjs'

const { path: file } = makeFile(100)

const badPaths = [
  ['a number that is not an fd', 1.5],
  ['a huge number', 2 ** 40],
  ['an object', {}],
  ['null', null],
  ['undefined', undefined],
  ['true', true],
  ['a function', function named() {}],
  // Node 20 and later word these differently from earlier lines: "Received function "
  // and a long string cut inside its quotes.
  ['an anonymous function', () => {}],
  ['a class', class {}],
  ['an array', [1, 2]],
  ['NaN', NaN],
  ['a string with a NUL byte', '/tmp/a\u0000b'],
  ['a Buffer with a NUL byte', Buffer.from('/tmp/a\u0000b')],
  ['an http URL', new URL('http://example.com/x')],
  ['a file URL with a host', new URL('file://host/x')],
  ['a file URL with an encoded slash', new URL('file:///a%2Fb')],
]

for (const [what, path] of badPaths) {
  test(`path is ${what}`, async (t) => {
    const cb = await bothCallback(path)
    t.deepEqual(cb.ours, cb.node)
    t.truthy(cb.ours.threw ?? cb.ours.error)
    const p = await bothPromise(path)
    t.deepEqual(p.ours, p.node)
    // The dual-form readFile without a callback rejects with the same error.
    if (typeof path !== 'number') t.deepEqual(await viaPromise(() => fairfs.readFile(path)), p.node)
  })
}

// node:fs's callback form trips over these in its fd check and throws a bare
// TypeError without a code; fairfs throws the ERR_INVALID_ARG_TYPE TypeError that
// node:fs's promise form gives (the node backend: node:fs's bare TypeError).
for (const [what, path] of [['a symbol', Symbol('s')], ['a bigint', 5n], ['a null-prototype object', Object.create(null)]]) {
  test(`path is ${what}${isNative ? '' : ' (node backend: as node:fs)'}`, async (t) => {
    const cb = await bothCallback(path)
    t.is(cb.node.threw.ctor, 'TypeError')
    const p = await bothPromise(path)
    t.deepEqual(p.ours, p.node)
    if (isNative) t.deepEqual(cb.ours.threw, p.node.error)
    else t.deepEqual(cb.ours, cb.node)
  })
}

const badOptions = [
  ['a number', 5],
  ['true', true],
  ['an unknown encoding', 'nope'],
  ['an unknown encoding in an object', { encoding: 'utf9' }],
  ['an unknown flag', { flag: 'zz' }],
  ['a flag of the wrong type', { flag: {} }],
  ['a signal that is not an AbortSignal', { signal: 1 }],
  ['a signal that is null', { signal: null }],
  ['a signal that is an object', { signal: {} }],
]

for (const [what, options] of badOptions) {
  test(`options is ${what}`, async (t) => {
    const cb = await bothCallback(file, options)
    t.deepEqual(cb.ours, cb.node)
    t.truthy(cb.ours.threw ?? cb.ours.error)
    const p = await bothPromise(file, options)
    t.deepEqual(p.ours, p.node)
  })
}

test('a missing callback throws like node:fs when the last argument is not a function', async (t) => {
  const node = await viaCallback(() => fs.readFile(file, 'utf8', 'not a function'))
  const ours = await viaCallback(() => fairfs.readFile(file, 'utf8', 'not a function'))
  t.deepEqual(ours, node)
  t.is(ours.threw.code, 'ERR_INVALID_ARG_TYPE')
})

test('errors from bad arguments are proper node errors', (t) => {
  const err = t.throws(() => fairfs.readFile({}, () => {}))
  t.true(err instanceof TypeError)
  t.is(err.name, 'TypeError')
  t.regex(err.stack, /^TypeError \[ERR_INVALID_ARG_TYPE\]: The "path" argument/)
  t.deepEqual(describeError(err).ownKeys, ['code'])
})
