// writeFile and appendFile, differential against node:fs: the callback form, fairfs's
// promise form (writeFile without a callback) and fairfs.promises; every kind of data
// and encoding, flags, modes, targets (paths, Buffers, URLs, fds, FileHandles), errors
// field by field (argument errors thrown or rejected where node:fs throws or rejects
// them), signals, flush, storage errors with the partial file each leaves (ENOSPC,
// EROFS, EFBIG, EACCES: root only, skipped visibly elsewhere), many writes at once,
// and install().
//
// Each case runs on node:fs in one fresh directory and on fairfs in another, one after
// the other; the outcomes (with each side's directory named <dir>), the file afterwards
// (bytes and mode) and the fds still open on it must be the same.
import test from 'ava'
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { Readable } from 'node:stream'
import { execFile, spawnSync } from 'node:child_process'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { fairfs, isNative, nativeOnly, tmpPath, describeError, fdsOpenOn, posixOnly, windows, emulated, noByteNames } from './helpers.mjs'
import { scratch, mountTmpfs, tmpfsUnavailable, prlimitUnavailable, nobodyUnavailable, NOBODY, pattern } from './fixtures/storage-errors.mjs'

/** node:fs's own functions, taken before any install() in this file. */
const nodeFs = {
  writeFile: fs.writeFile,
  appendFile: fs.appendFile,
  promises: { writeFile: fs.promises.writeFile, appendFile: fs.promises.appendFile },
}
const OPS = ['writeFile', 'appendFile']
const SIDES = ['node', 'ours']

/** fairfs's function `name` ('writeFile', 'promises.appendFile'), failing the test plainly where it is missing. */
function fairfsFn(name) {
  const fn = name.split('.').reduce((holder, key) => holder?.[key], fairfs)
  if (typeof fn !== 'function') throw new Error(`fairfs.${name} is not a function (backend ${fairfs.backend})`)
  return fn
}

/**
 * What a callback-form call did: a synchronous throw, or what its callback got, whether
 * it came before the call returned, and how many times it came.
 */
function callbackOutcome(fn, args) {
  return new Promise((resolve) => {
    let sync = true
    let calls = 0
    let returned
    try {
      returned = fn(...args, function (...given) {
        if (calls++ > 0) return
        const first = { sync, args: given.map(describeArg), thisIsUndefined: this === undefined }
        // A second call of the callback would show in `calls`.
        setTimeout(() => resolve({ ...first, calls, returned: typeof returned }), 20)
      })
    } catch (e) {
      resolve({ threw: describeError(e), calls })
    }
    sync = false
  })
}
const describeArg = (a) => (a instanceof Error ? { error: describeError(a) } : a == null ? a : { value: a })

/** What a promise-form call did: a synchronous throw, a rejection or the value. */
async function promiseOutcome(call) {
  let p
  try {
    p = call()
  } catch (e) {
    return { threw: describeError(e) }
  }
  const isPromise = p instanceof Promise
  try {
    return { isPromise, resolved: await p }
  } catch (e) {
    return { isPromise, rejected: describeError(e) }
  }
}

const isInt32 = (v) => Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31

/**
 * The forms, each as node:fs and as fairfs. fairfs's writeFile without a callback
 * answers as fs.promises.writeFile does, except that an integer fd (which
 * fs.promises refuses) is written as fs.writeFile writes it, its errors rejected
 * (as readFile's promise form does).
 */
const forms = {
  callback: {
    node: (op, args) => callbackOutcome(nodeFs[op], args),
    ours: (op, args) => callbackOutcome(fairfsFn(op), args),
  },
  promises: {
    node: (op, args) => promiseOutcome(() => nodeFs.promises[op](...args)),
    ours: (op, args) => {
      const fn = fairfsFn(`promises.${op}`)
      return promiseOutcome(() => fn(...args))
    },
  },
  'no callback': {
    node: (op, args) => promiseOutcome(() => (isInt32(args[0]) ? promisified(nodeFs[op], args) : nodeFs.promises[op](...args))),
    ours: (op, args) => {
      const fn = fairfsFn(op)
      return promiseOutcome(() => fn(...args))
    },
  },
}
const FORMS = Object.keys(forms)

/** `fn(...args, callback)` as a promise; a synchronous throw rejects it. */
function promisified(fn, args) {
  return new Promise((resolve, reject) => fn(...args, (err) => (err ? reject(err) : resolve())))
}

const at = (dir, name = 'f') => path.join(dir, name)
let dirs = 0
/** A fresh, empty directory for one side of a case. */
function freshDir(side) {
  const dir = tmpPath(`w${dirs++}-${side}`)
  fs.mkdirSync(dir)
  return dir
}

const sha256 = (bytes) => crypto.createHash('sha256').update(bytes).digest('hex')

/** A file as a test sees it: kind, mode, size and bytes (a digest when long). */
function describeFile(file) {
  let st
  try {
    st = fs.lstatSync(file)
  } catch (e) {
    return { missing: e.code }
  }
  if (!st.isFile()) return { kind: st.isDirectory() ? 'directory' : st.isSymbolicLink() ? 'symlink' : 'other' }
  const bytes = fs.readFileSync(file)
  return { mode: (st.mode & 0o7777).toString(8), size: st.size, bytes: bytes.length <= 300 ? bytes.toString('latin1') : `sha256 ${sha256(bytes)}` }
}

/** `value` with every `from` in its strings (and plain objects and arrays) replaced by `to`. */
function normalize(value, replacements) {
  if (typeof value === 'string') return replacements.reduce((s, [from, to]) => s.split(from).join(to), value)
  if (Buffer.isBuffer(value)) return { buffer: normalize(value.toString('latin1'), replacements) }
  if (Array.isArray(value)) return value.map((v) => normalize(v, replacements))
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalize(v, replacements)]))
  }
  return value
}

/**
 * One side of a case `c`: in a fresh directory (or `c.dir(t, side)`), `c.setup(dir)`
 * makes the starting state, `c.args(dir)` gives the arguments before the callback (or
 * `c.make(dir)` gives `{ args, after, fd }`: `after()` runs once the call is done and
 * what it returns is compared too; `fd` is named <fd> in messages). Then `op` in `form`
 * on `side` (or `c.run(side, form, op, args)`). Resolves with the outcome, the file
 * `c.file` (default 'f') afterwards and the fds still open on it.
 */
async function runSide(t, side, form, op, c) {
  const dir = c.dir ? await c.dir(t, side) : freshDir(side)
  await c.setup?.(dir)
  const { args, after, fd } = c.make ? await c.make(dir) : { args: c.args(dir) }
  const outcome = c.run ? await c.run(side, form, op, args) : await forms[form][side](op, args)
  const file = at(dir, c.file)
  const result = { outcome, file: describeFile(file), fdsOpen: windows ? null : fdsOpenOn(file) }
  if (after) result.after = await after()
  const replacements = [[dir, '<dir>']]
  if (fd !== undefined) replacements.push([`(${fd})`, '(<fd>)'])
  return normalize(result, replacements)
}

/** `c` with `op` in `form` on node:fs and on fairfs, compared; resolves with both. */
async function compare(t, form, op, c, label = '') {
  const node = await runSide(t, 'node', form, op, c)
  const ours = await runSide(t, 'ours', form, op, c)
  t.deepEqual(ours, node, `${label}${op}, ${form}`)
  return { node, ours }
}

/** `compare` for every op in every form; resolves with the pairs by 'op, form'. */
async function everyForm(t, c, { ops = OPS, forms: names = FORMS, label = '' } = {}) {
  const results = {}
  for (const op of ops) {
    for (const form of names) results[`${op}, ${form}`] = await compare(t, form, op, c, label)
  }
  return results
}

const previous = 'previous contents, longer than most data\n'
const existing = (dir) => fs.writeFileSync(at(dir), previous)
/** The arguments `[path, data, options?]`, options left out where undefined. */
const withOptions = (target, data, options) => (options === undefined ? [target, data] : [target, data, options])

// More than six of the 512 KiB chunks fairfs reads in, and not a multiple of anything.
const big = crypto.randomBytes(3 * 1024 * 1024 + 7)
// A small Buffer.from() is a slice of node's shared pool: its byteOffset is not 0.
const pooled = Buffer.from('a small buffer on the shared pool')
const sharedBytes = new Uint8Array(new SharedArrayBuffer(6))
sharedBytes.set([5, 4, 3, 2, 1, 0])
const viewBytes = Uint8Array.from({ length: 32 }, (_, i) => i * 8)

// ---------------------------------------------------------------------------------
// Data

/** What is written, with the options it is written with (left out where undefined). */
const dataCases = {
  'a utf8 string (the default encoding)': ['héllo wörld € 😀\n'],
  'a utf8 string with lone surrogates': ['a\ud800b\udc00c'],
  'a string, encoding utf-8': ['héllo', 'utf-8'],
  'a string, encoding UTF8 in an object': ['héllo', { encoding: 'UTF8' }],
  'a string, encoding latin1': ['ÿþ\u0100Ā abc', 'latin1'],
  'a string, encoding binary in an object': ['ÿþ\u0100 abc', { encoding: 'binary' }],
  'a string, encoding hex': ['deadBEEF00', 'hex'],
  'a string, encoding hex, odd length': ['abcdef1', 'hex'],
  'a string, encoding hex, bad digits': ['abzz12', 'hex'],
  'a string, encoding base64': ['aGVsbG8gd29ybGQ=\n', 'base64'],
  'a string, encoding base64, url-safe characters, no padding, spaces': ['-_+/ aGk', 'base64'],
  'a string, encoding base64url': ['aGVsbG8_-w', 'base64url'],
  'a string, encoding ucs2': ['abc€😀\ud800', 'ucs2'],
  'a string, encoding ucs-2': ['abc€', 'ucs-2'],
  'a string, encoding utf16le in an object': ['abc€', { encoding: 'utf16le' }],
  'a string, encoding ascii': ['abc é ÿ € \x80 \x7f', 'ascii'],
  'a string, encoding null (utf8)': ['héllo', { encoding: null }],
  "a string of 349,526 '€' (just over 1 MiB of UTF-8)": ['€'.repeat(349_526)],
  'an empty string': [''],
  'an empty string, encoding hex': ['', 'hex'],
  'a Buffer': [Buffer.from([0, 1, 2, 255, 254, 10])],
  'a Buffer on the shared pool (byteOffset not 0)': [pooled.subarray(2, 13)],
  'a Buffer, with an encoding that is ignored': [Buffer.from('héllo'), 'hex'],
  'a Buffer, with encoding buffer': [Buffer.from('héllo'), 'buffer'],
  'an empty Buffer': [Buffer.alloc(0)],
  'a Uint8Array': [new Uint8Array([1, 2, 3, 250])],
  'a Uint8Array over a SharedArrayBuffer': [sharedBytes],
  'a Uint8ClampedArray': [new Uint8ClampedArray([0, 128, 255])],
  'a Uint16Array viewing part of its buffer': [new Uint16Array(viewBytes.buffer, 2, 5)],
  'an Int8Array': [new Int8Array([-1, -128, 127])],
  'a Float64Array': [new Float64Array([Math.PI, -0, NaN, Infinity])],
  'a BigInt64Array': [new BigInt64Array([-1n, 2n ** 62n])],
  'a DataView viewing part of its buffer': [new DataView(viewBytes.buffer, 3, 7)],
  'an empty Uint8Array (0 bytes)': [new Uint8Array(0)],
  'an empty DataView': [new DataView(new ArrayBuffer(0))],
  '3 MiB + 7 bytes': [big],
  '3 MiB + 7 bytes, flush': [big, { flush: true }],
}

for (const [what, [data, options]] of Object.entries(dataCases)) {
  test(`data: ${what}: the same bytes as node:fs, every form`, async (t) => {
    const results = await everyForm(t, { setup: existing, args: (dir) => withOptions(at(dir), data, options) })
    // The cases are not vacuous: node:fs wrote, on both.
    t.true('size' in results['writeFile, callback'].node.file)
    t.true(results['appendFile, callback'].node.file.size >= previous.length)
  })
}

test('data: 3 MiB + 7 bytes over a longer file: exactly those bytes, every form', async (t) => {
  const setup = (dir) => fs.writeFileSync(at(dir), Buffer.alloc(big.length + 4096, 1))
  const results = await everyForm(t, { setup, args: (dir) => [at(dir), big] }, { ops: ['writeFile'] })
  for (const { ours } of Object.values(results)) t.is(ours.file.bytes, `sha256 ${sha256(big)}`)
})

/** Data that node:fs refuses in every form. */
const badData = {
  'a number': 1,
  zero: 0,
  'an object': {},
  'an object with its own toString': { toString: () => 'text' },
  null: null,
  undefined,
  true: true,
  'a symbol': Symbol('s'),
  'a function': function named() {},
  'a bigint': 5n,
  'an ArrayBuffer': new ArrayBuffer(4),
  'a SharedArrayBuffer': new SharedArrayBuffer(4),
}
for (const [what, data] of Object.entries(badData)) {
  test(`data: ${what}: node:fs's ERR_INVALID_ARG_TYPE, nothing written, every form`, async (t) => {
    const results = await everyForm(t, { setup: existing, args: (dir) => [at(dir), data] })
    t.is(results['writeFile, callback'].ours.outcome.threw?.code, 'ERR_INVALID_ARG_TYPE')
    t.is(results['writeFile, promises'].ours.outcome.rejected?.code, 'ERR_INVALID_ARG_TYPE')
    t.is(results['writeFile, no callback'].ours.outcome.rejected?.code, 'ERR_INVALID_ARG_TYPE')
  })
}

// fs.promises.writeFile takes any iterable or async iterable that is not a string (an
// array, a String object, a generator, a stream) and writes its chunks; fs.writeFile
// refuses them. What fairfs's writeFile without a callback does with them is left open.
const iterables = {
  'an array of strings, encoding hex': [() => ['ab', 'cd', ''], 'hex'],
  'an array of Buffers and typed arrays': [() => [Buffer.from('ab'), new Uint8Array([99, 100]), new Uint16Array([0x6665])]],
  'a String object': [() => new String('a String object')],
  'a Set of strings': [() => new Set(['one ', 'two'])],
  'a generator of strings, encoding base64': [
    () =>
      (function* () {
        yield 'aGVs'
        yield 'bG8='
      })(),
    'base64',
  ],
  'an async generator': [
    () =>
      (async function* () {
        yield 'a'
        await new Promise((resolve) => setTimeout(resolve, 5))
        yield Buffer.from('b')
      })(),
  ],
  'a Readable stream': [() => Readable.from(['chunk one, ', 'chunk two'])],
  'a Readable stream of 3 MiB + 7 bytes in 64 KiB chunks': [() => Readable.from(Array.from({ length: Math.ceil(big.length / 65536) }, (_, i) => big.subarray(i * 65536, (i + 1) * 65536)))],
  'an empty array': [() => []],
  'an array with a number after a string (rejects, the string written)': [() => ['written ', 1]],
  'a generator that throws after a chunk': [
    () =>
      (function* () {
        yield 'first '
        throw new Error('from the generator')
      })(),
  ],
}
for (const [what, [make, options]] of Object.entries(iterables)) {
  test(`data: ${what}: promises.writeFile and promises.appendFile as node:fs`, async (t) => {
    await everyForm(t, { setup: existing, args: (dir) => withOptions(at(dir), make(), options) }, { forms: ['promises'] })
  })
}

for (const [what, make] of [
  ['an array', () => ['a', 'b']],
  ['a String object', () => new String('abc')],
  ['a generator', () => (function* () {})()],
]) {
  test(`data: ${what} in the callback form: node:fs's ERR_INVALID_ARG_TYPE, thrown`, async (t) => {
    const results = await everyForm(t, { setup: existing, args: (dir) => [at(dir), make()] }, { forms: ['callback'] })
    t.is(results['writeFile, callback'].ours.outcome.threw?.code, 'ERR_INVALID_ARG_TYPE')
  })
}

// ---------------------------------------------------------------------------------
// Options

const optionCases = {
  'no options (the callback third)': [],
  'options undefined': [undefined],
  'options null': [null],
  'options {}': [{}],
  'an encoding as the options': ['latin1'],
  'unknown option names': [{ encoding: 'utf8', foo: 1, mode: undefined, flag: undefined }],
  'a frozen options object': [Object.freeze({ encoding: 'hex', flag: 'a' })],
  'an encoding inherited from the options object prototype': [Object.create({ encoding: 'hex' })],
  'an unknown encoding': ['nope'],
  'an unknown encoding in an object': [{ encoding: 'utf9' }],
  'encoding buffer for a string': ['buffer'],
  'an empty encoding string': [''],
  'options a number': [5],
  'options true': [true],
  'options a function (in the promise forms)': [function options() {}],
}
for (const [what, options] of Object.entries(optionCases)) {
  for (const data of ['c0ffee', Buffer.from('a Buffer')]) {
    const kind = typeof data === 'string' ? 'a string' : 'a Buffer'
    test(`options: ${what}, ${kind}: as node:fs, every form`, async (t) => {
      // A function as the options is the callback in the callback form and in fairfs's dual one.
      const names = typeof options[0] === 'function' ? ['promises'] : FORMS
      await everyForm(t, { setup: existing, args: (dir) => [at(dir), data, ...options] }, { forms: names })
    })
  }
}

test('options: the options object is not changed, and works again', async (t) => {
  const options = { encoding: 'hex', mode: 0o600 }
  for (const form of FORMS) {
    for (const op of OPS) {
      const results = await compare(t, form, op, { setup: existing, args: (dir) => [at(dir), 'abcd', options] })
      t.is(results.ours.outcome.threw, undefined)
    }
  }
  t.deepEqual(Object.entries(options), [
    ['encoding', 'hex'],
    ['mode', 0o600],
  ])
})

test('a last argument that is not a function: ERR_INVALID_ARG_TYPE thrown as node:fs, nothing written', async (t) => {
  const call = (fn, args) => {
    try {
      return { returned: typeof fn(...args) }
    } catch (e) {
      return { threw: describeError(e) }
    }
  }
  for (const op of OPS) {
    for (const last of ['not a function', 5, {}, null]) {
      const results = await compare(
        t,
        'callback',
        op,
        {
          setup: existing,
          run: (side, _form, op, args) => call(side === 'node' ? nodeFs[op] : fairfsFn(op), args),
          args: (dir) => [at(dir), 'data', 'utf8', last],
        },
        `last argument ${String(last)}: `,
      )
      t.is(results.ours.outcome.threw?.code, 'ERR_INVALID_ARG_TYPE')
    }
  }
})

// ---------------------------------------------------------------------------------
// Flags

const { O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND, O_EXCL, O_RDONLY } = fs.constants
const flagCases = [
  ['w', 'existing'],
  ['w', 'fresh'],
  ['a', 'existing'],
  ['a', 'fresh'],
  ['wx (EEXIST, the path in the message)', 'existing', 'wx'],
  ['wx', 'fresh'],
  ['xw', 'existing'],
  ['ax', 'existing'],
  ['ax', 'fresh'],
  ['a+', 'existing'],
  ['ax+', 'fresh'],
  ['w+', 'existing'],
  ['wx+', 'existing'],
  ['r+ (overwrites the start, keeps the tail)', 'existing', 'r+'],
  ['r+ (ENOENT)', 'fresh', 'r+'],
  ['rs+', 'existing'],
  ['as', 'existing'],
  ['as+', 'fresh'],
  ['r (EBADF from the write)', 'existing', 'r'],
  ['O_WRONLY | O_CREAT | O_TRUNC', 'existing', O_WRONLY | O_CREAT | O_TRUNC],
  ['O_WRONLY | O_APPEND', 'existing', O_WRONLY | O_APPEND],
  ['O_WRONLY (no O_TRUNC: overwrites the start)', 'existing', O_WRONLY],
  ['O_RDWR | O_CREAT | O_EXCL (EEXIST)', 'existing', O_RDWR | O_CREAT | O_EXCL],
  ['O_RDONLY, 0 (falsy: the default)', 'existing', O_RDONLY],
  ["'' (falsy: the default)", 'existing', ''],
  ['null (the default)', 'existing', null],
  ['an unknown flag string', 'existing', 'zz'],
  ['an upper-case flag', 'existing', 'W'],
  ['an object', 'existing', {}],
  ['a number beyond 32 bits', 'existing', 2 ** 40],
  ['a fraction', 'existing', 1.5],
]
for (const [what, state, flag = what] of flagCases) {
  for (const data of ['NEW', '']) {
    test(`flag ${what}, ${state} file, ${data ? 'data' : 'no data'}: as node:fs, every form`, async (t) => {
      await everyForm(t, { setup: state === 'existing' ? existing : undefined, args: (dir) => [at(dir), data, { flag }] })
    })
  }
}

test('appendFile with flag w truncates and with r+ overwrites the start, as node:fs', async (t) => {
  for (const flag of ['w', 'r+']) {
    const results = await everyForm(t, { setup: existing, args: (dir) => [at(dir), 'XY', { flag }] }, { ops: ['appendFile'] })
    t.is(results['appendFile, callback'].node.file.bytes, flag === 'w' ? 'XY' : `XY${previous.slice(2)}`)
  }
})

// ---------------------------------------------------------------------------------
// Modes. Serial: the umask is process-wide (ava runs serial tests before the others).

const modeCases = {
  'the default (0o666)': undefined,
  '0o600': 0o600,
  '0o777': 0o777,
  "the octal string '640'": '640',
  '0o4755 (setuid)': 0o4755,
  '0o1777 (sticky)': 0o1777,
  0: 0,
  null: null,
  "an octal string with a prefix, '0o644'": '0o644',
  "a string that is not octal, 'abc'": 'abc',
  '-1': -1,
  1.5: 1.5,
  '2 ** 32': 2 ** 32,
  'an object': {},
}
test.serial('modes on creation, under umask 0o027: as node:fs, every form', async (t) => {
  const umask = process.umask(0o027)
  t.teardown(() => process.umask(umask))
  for (const [what, mode] of Object.entries(modeCases)) {
    const results = await everyForm(t, { args: (dir) => [at(dir), 'data', { mode }] }, { label: `mode ${what}: ` })
    if (mode === 0o600) t.is(results['writeFile, callback'].ours.file.mode, '600')
    if (mode === undefined) t.is(results['writeFile, callback'].ours.file.mode, '640')
  }
})

test.serial('a mode does not change an existing file: as node:fs, every form', async (t) => {
  const umask = process.umask(0o022)
  t.teardown(() => process.umask(umask))
  const setup = (dir) => {
    existing(dir)
    fs.chmodSync(at(dir), 0o640)
  }
  const results = await everyForm(t, { setup, args: (dir) => [at(dir), 'data', { mode: 0o600 }] })
  t.is(results['writeFile, callback'].ours.file.mode, '640')
})

// ---------------------------------------------------------------------------------
// Targets: paths of every kind, fds, FileHandles

test('a Buffer path, a Uint8Array path and a file: URL: as node:fs, every form', async (t) => {
  const name = 'with space, %, #, ü'
  for (const [what, target] of Object.entries({
    'a Buffer': (dir) => Buffer.from(at(dir, name)),
    'a Uint8Array': (dir) => new Uint8Array(Buffer.from(at(dir, name))),
    'a file: URL': (dir) => pathToFileURL(at(dir, name)),
  })) {
    await everyForm(t, { file: name, args: (dir) => [target(dir), 'data'] }, { label: `${what}: ` })
  }
})

posixOnly(noByteNames, test)('a Buffer path that is not UTF-8: as node:fs, every form', async (t) => {
  const name = Buffer.from([0x66, 0xff, 0xfe])
  const target = (dir) => Buffer.concat([Buffer.from(`${dir}/`), name])
  for (const op of OPS) {
    for (const form of FORMS) {
      const outcomes = []
      const files = []
      for (const side of SIDES) {
        const dir = freshDir(side)
        fs.writeFileSync(target(dir), previous)
        outcomes.push(normalize(await forms[form][side](op, [target(dir), 'data']), [[dir, '<dir>']]))
        files.push(fs.readFileSync(target(dir), 'latin1'))
      }
      t.deepEqual(outcomes[1], outcomes[0], `${op}, ${form}`)
      t.deepEqual(files[1], files[0], `${op}, ${form}`)
    }
  }
})

test('a symlink to a file is written through; a dangling one creates its target; wx on either is EEXIST', async (t) => {
  for (const [what, setup] of Object.entries({
    'a symlink to a file': (dir) => {
      fs.writeFileSync(at(dir, 'real'), previous)
      fs.symlinkSync('real', at(dir))
    },
    'a dangling symlink': (dir) => fs.symlinkSync('real', at(dir)),
  })) {
    for (const flag of ['w', 'a', 'wx']) {
      await everyForm(t, { setup, file: 'real', args: (dir) => [at(dir), 'data', { flag }] }, { label: `${what}, ${flag}: ` })
    }
  }
})

/**
 * A case on an fd of 'f' opened with `flags` by fs.openSync, `prior` written to it first:
 * afterwards the fd is still open (fstat works) and at the position the write left
 * (a byte written now lands right after the data).
 */
function fdCase(flags, { prior = 'AB', data = 'XY', options, setup = existing } = {}) {
  return {
    setup,
    make(dir) {
      const fd = fs.openSync(at(dir), flags)
      if (prior) fs.writeSync(fd, prior)
      return {
        fd,
        args: withOptions(fd, data, options),
        after() {
          const after = { fstatSize: fs.fstatSync(fd).size }
          try {
            fs.writeSync(fd, '!')
            after.then = fs.readFileSync(at(dir), 'latin1')
          } catch (e) {
            after.writeAfter = e.code
          }
          fs.closeSync(fd)
          return after
        },
      }
    },
  }
}

const fdCases = {
  "opened 'r+', after a write: written at its position, not truncated": fdCase('r+'),
  "opened 'r+', nothing written before: written at the start": fdCase('r+', { prior: '' }),
  "opened 'w', after a write": fdCase('w'),
  "opened 'a': appended": fdCase('a'),
  "opened 'r+', 3 MiB + 7 bytes": fdCase('r+', { data: big }),
  "opened 'r+', empty data": fdCase('r+', { data: '' }),
  "opened 'r+', encoding hex": fdCase('r+', { data: 'c0ffee', options: 'hex' }),
  "opened 'r+', flag wx and a bad mode, which an fd ignores": fdCase('r+', { options: { flag: 'wx', mode: 'abc' } }),
  "opened 'r+', flush": fdCase('r+', { options: { flush: true } }),
  "opened 'r' (EBADF)": fdCase('r', { prior: '' }),
  "opened 'r', empty data": fdCase('r', { prior: '', data: '' }),
}
for (const [what, c] of Object.entries(fdCases)) {
  test(`an fd ${what}: as node:fs (promises refuse an fd)`, async (t) => {
    const results = await everyForm(t, c)
    t.is(results['writeFile, promises'].ours.outcome.rejected?.code, 'ERR_INVALID_ARG_TYPE')
  })
}

test('appendFile on an fd writes at its position, not at the end (unless opened with O_APPEND), as node:fs', async (t) => {
  const results = await everyForm(t, fdCase('r+'), { ops: ['appendFile'], forms: ['callback', 'no callback'] })
  t.is(results['appendFile, callback'].node.file.bytes, `ABXY${previous.slice(4)}`)
})

test('an fd that is not open: EBADF as node:fs', async (t) => {
  // Not an fd closed here: another test's open may be given its number meanwhile.
  for (const fd of [2 ** 30, 2 ** 31 - 1]) {
    const results = await everyForm(t, { args: () => [fd, 'data'] }, { forms: ['callback', 'no callback'] })
    t.is(results['writeFile, callback'].ours.outcome.args?.[0]?.error.code, 'EBADF')
  }
})

/**
 * A case on a FileHandle of 'f' opened with `flags`, `prior` written first (or closed):
 * afterwards the handle is still open and at the position the write left.
 */
function handleCase(flags, { prior = 'AB', data = 'XY', options, closed = false } = {}) {
  return {
    setup: existing,
    async make(dir) {
      const handle = await fs.promises.open(at(dir), flags)
      if (prior) await handle.write(prior)
      if (closed) await handle.close()
      return {
        fd: handle.fd,
        args: withOptions(handle, data, options),
        async after() {
          const after = { fd: handle.fd === -1 ? 'closed' : 'open' }
          try {
            after.statSize = (await handle.stat()).size
            await handle.write('!')
            after.then = fs.readFileSync(at(dir), 'latin1')
          } catch (e) {
            after.afterwards = e.code
          }
          await handle.close().catch(() => {})
          return after
        },
      }
    },
  }
}

const handleCases = {
  "opened 'r+', after a write: written at its position, not truncated": handleCase('r+'),
  "opened 'w', after a write": handleCase('w'),
  "opened 'a': appended": handleCase('a'),
  "opened 'r+', 3 MiB + 7 bytes": handleCase('r+', { data: big }),
  "opened 'r+', encoding base64": handleCase('r+', { data: 'aGVsbG8=', options: { encoding: 'base64' } }),
  "opened 'r+', flag wx and a bad mode, which a FileHandle ignores": handleCase('r+', { options: { flag: 'wx', mode: 'abc' } }),
  "opened 'r+', flush": handleCase('r+', { options: { flush: true } }),
  "opened 'r+', a bad flush": handleCase('r+', { options: { flush: 'yes' } }),
  "opened 'r+', an array of strings": handleCase('r+', { data: ['a', 'b', 'c'] }),
  "opened 'r' (EBADF)": handleCase('r', { prior: '' }),
  "opened 'r', empty data (nothing is written: no error)": handleCase('r', { prior: '', data: '' }),
  closed: handleCase('r+', { closed: true }),
  'closed, empty data': handleCase('r+', { closed: true, data: '' }),
}
for (const [what, c] of Object.entries(handleCases)) {
  test(`a FileHandle ${what}: promises.writeFile and promises.appendFile as node:fs`, async (t) => {
    await everyForm(t, c, { forms: ['promises'] })
  })
}

test('a FileHandle in the callback form: ERR_INVALID_ARG_TYPE thrown, as node:fs', async (t) => {
  const results = await everyForm(t, handleCase('r+'), { forms: ['callback'] })
  t.is(results['writeFile, callback'].ours.outcome.threw?.code, 'ERR_INVALID_ARG_TYPE')
})

// ---------------------------------------------------------------------------------
// Errors

const errorCases = {
  'a missing parent directory (ENOENT)': { args: (dir) => [at(dir, 'missing/f'), 'data'] },
  'a directory (EISDIR)': { setup: (dir) => fs.mkdirSync(at(dir)), args: (dir) => [at(dir), 'data'] },
  'a new name with a trailing slash (EISDIR)': { args: (dir) => [`${at(dir)}/`, 'data'] },
  'a file as a directory (ENOTDIR)': { setup: existing, args: (dir) => [at(dir, 'f/g'), 'data'] },
  'a symlink loop (ELOOP)': {
    setup: (dir) => {
      fs.symlinkSync('g', at(dir))
      fs.symlinkSync('f', at(dir, 'g'))
    },
    args: (dir) => [at(dir), 'data'],
  },
  'a name too long (ENAMETOOLONG)': { args: (dir) => [at(dir, 'x'.repeat(300)), 'data'] },
  'an existing file, flag wx (EEXIST)': { setup: existing, args: (dir) => [at(dir), 'data', { flag: 'wx' }] },
  'a NUL byte in a string path': { args: (dir) => [`${at(dir)}\u0000x`, 'data'] },
  // node:fs's message shows the Buffer's first bytes: the same on both sides.
  'a NUL byte in a Buffer path': { args: () => [Buffer.from('/tmp/a\u0000b'), 'data'] },
  'a NUL byte in a file: URL': { args: (dir) => [new URL(`${pathToFileURL(at(dir))}%00x`), 'data'] },
  'a path that is a fraction': { args: () => [1.5, 'data'] },
  'a path that is -1': { args: () => [-1, 'data'] },
  'a path that is 2 ** 31': { args: () => [2 ** 31, 'data'] },
  'a path that is an object': { args: () => [{}, 'data'] },
  'a path that is null': { args: () => [null, 'data'] },
  'a path that is undefined': { args: () => [undefined, 'data'] },
  'a path that is true': { args: () => [true, 'data'] },
  'a path that is an array': { args: () => [[], 'data'] },
  'an http URL': { args: () => [new URL('http://example.com/f'), 'data'] },
  'a file: URL with a host': { args: () => [new URL('file://host/f'), 'data'] },
  'a file: URL with an encoded slash': { args: (dir) => [new URL(`${pathToFileURL(dir)}/a%2Fb`), 'data'] },
}
for (const [what, c] of Object.entries(errorCases)) {
  test(`errors: ${what}: as node:fs, field by field, every form`, async (t) => {
    const results = await everyForm(t, c)
    const { outcome } = results['writeFile, callback'].ours
    t.truthy(outcome.threw ?? outcome.args?.[0]?.error, 'node:fs fails here')
  })
}

// The order node:fs checks things in: the encoding, flush, the data, the signal's
// abort, then the path, the flags and the mode (in open). Each pair below is wrong
// twice; the error must be the one node:fs reports.
const aborted = AbortSignal.abort('aborted before the call')
const orderCases = {
  'a bad encoding and a bad flush': (dir) => [at(dir), 'x', { encoding: 'nope', flush: 'yes' }],
  'a bad flush and bad data': (dir) => [at(dir), 1, { flush: 'yes' }],
  'bad data and a bad path': () => [{}, 1],
  'bad data and an aborted signal': (dir) => [at(dir), 1, { signal: aborted }],
  'a bad flush and an aborted signal': (dir) => [at(dir), 'x', { flush: 1, signal: aborted }],
  'a bad signal and a bad path': () => [{}, 'x', { signal: 1 }],
  'a bad signal and bad data': (dir) => [at(dir), 1, { signal: 1 }],
  'an aborted signal and a bad path': () => ['a\u0000b', 'x', { signal: aborted }],
  'an aborted signal and a bad flag': (dir) => [at(dir), 'x', { flag: 'zz', signal: aborted }],
  'an aborted signal and a bad mode': (dir) => [at(dir), 'x', { mode: 'abc', signal: aborted }],
  'a bad path and a bad flag': () => ['a\u0000b', 'x', { flag: 'zz' }],
  'a bad flag and a bad mode': (dir) => [at(dir), 'x', { flag: 'zz', mode: 'abc' }],
  'a missing directory and a bad flag': (dir) => [at(dir, 'missing/f'), 'x', { flag: 'zz' }],
}
for (const [what, args] of Object.entries(orderCases)) {
  test(`errors: ${what}: the one node:fs reports, every form`, async (t) => {
    await everyForm(t, { setup: existing, args })
  })
}

// ---------------------------------------------------------------------------------
// Signals

const reasons = {
  'no reason': AbortSignal.abort(),
  'a string reason': AbortSignal.abort('why'),
  'an Error reason': AbortSignal.abort(new Error('because')),
}
for (const [what, signal] of Object.entries(reasons)) {
  test(`signal aborted before the call, ${what}: AbortError with the cause, no file made, nothing written, every form`, async (t) => {
    for (const [state, setup] of [
      ['fresh', undefined],
      ['existing', existing],
    ]) {
      const results = await everyForm(t, { setup, args: (dir) => [at(dir), 'data', { signal }] }, { label: `${state} file: ` })
      const { ours } = results['writeFile, promises']
      t.like(ours.outcome.rejected, { name: 'AbortError', code: 'ABORT_ERR', cause: signal.reason })
      if (state === 'fresh') t.deepEqual(ours.file, { missing: 'ENOENT' })
      else t.is(ours.file.bytes, previous)
    }
  })

  test(`signal aborted before the call, ${what}, on an fd: AbortError, nothing written, the fd left open`, async (t) => {
    const results = await everyForm(t, fdCase('r+', { options: { signal } }), { forms: ['callback', 'no callback'] })
    t.is(results['writeFile, callback'].ours.file.bytes, `AB${previous.slice(2)}`)
  })

  test(`signal aborted before the call, ${what}, on a FileHandle: AbortError, nothing written, the handle left open`, async (t) => {
    const results = await everyForm(t, handleCase('r+', { options: { signal } }), { forms: ['promises'] })
    t.is(results['writeFile, promises'].ours.file.bytes, `AB${previous.slice(2)}`)
  })
}

const signalValues = {
  'a number': 1,
  'a string': 'signal',
  null: null,
  'an empty object': {},
  'an object that says it is aborted': { aborted: true, reason: 'duck' },
  'an object that says it is not aborted': { aborted: false },
  'a signal not aborted': new AbortController().signal,
  // Made when its test runs, and far from firing: a whole run under qemu takes minutes.
  'a signal aborted after a timeout that has not fired': () => AbortSignal.timeout(2 ** 31 - 1),
  undefined,
}
for (const [what, value] of Object.entries(signalValues)) {
  test(`signal: ${what}: as node:fs, every form`, async (t) => {
    const signal = typeof value === 'function' ? value() : value
    await everyForm(t, { setup: existing, args: (dir) => [at(dir), 'data', { signal }] })
  })
}

// An abort right after the call has returned. node:fs then fails with AbortError
// (its open has not completed yet) and leaves an empty file (writeFile) or the old
// one (appendFile); fairfs may have got further, or less far, but must fail the same
// way and leave nothing but a prefix of what a whole write would have left.
for (const form of FORMS) {
  for (const op of OPS) {
    test(`signal aborted just after the call, ${op}, ${form}: AbortError as node:fs, only a prefix written, no fd left`, async (t) => {
      const outcomes = {}
      for (const side of SIDES) {
        const dir = freshDir(side)
        if (op === 'appendFile') existing(dir)
        const controller = new AbortController()
        const pending = forms[form][side](op, [at(dir), big, { signal: controller.signal }])
        controller.abort('late')
        outcomes[side] = normalize(await pending, [[dir, '<dir>']])
        const start = op === 'appendFile' ? Buffer.from(previous) : Buffer.alloc(0)
        const whole = Buffer.concat([start, big])
        const file = fs.existsSync(at(dir)) ? fs.readFileSync(at(dir)) : null
        if (op === 'appendFile' || side === 'node') t.not(file, null, `${side}: the file is there`)
        if (file) {
          t.true(file.length >= start.length && whole.subarray(0, file.length).equals(file), `${side}: ${file.length} bytes, not a prefix of the whole write`)
        }
        if (!windows) t.is(fdsOpenOn(at(dir)), 0, `${side}: no fd left open`)
      }
      t.deepEqual(outcomes.ours, outcomes.node)
      t.like(outcomes.node.args?.[0]?.error ?? outcomes.node.rejected, { name: 'AbortError', cause: 'late' })
    })
  }
}

// ---------------------------------------------------------------------------------
// flush

for (const [what, flush] of Object.entries({ true: true, false: false, null: null, undefined, "'yes' (ERR_INVALID_ARG_TYPE)": 'yes', '1 (ERR_INVALID_ARG_TYPE)': 1, 'an object (ERR_INVALID_ARG_TYPE)': {} })) {
  test(`flush ${what}: as node:fs, every form`, async (t) => {
    for (const [state, setup] of [
      ['fresh', undefined],
      ['existing', existing],
    ]) {
      await everyForm(t, { setup, args: (dir) => [at(dir), 'data', { flush }] }, { label: `${state} file: ` })
    }
  })
}

// ---------------------------------------------------------------------------------
// Storage errors. Root only: tmpfs mounts, a file size limit, another user.

/** `testFn` registering every test as skipped, with `[reason]` in its title (as helpers.mjs does). */
function skipping(testFn, reason) {
  const skip = (title, ...rest) => testFn.skip(`${title} [${reason}]`, ...rest)
  skip.skip = skip
  return skip
}

function remountReadOnly(dir) {
  const r = spawnSync('mount', ['-o', 'remount,ro', dir], { encoding: 'utf8', timeout: 10_000 })
  if (r.status !== 0) throw new Error(`mount -o remount,ro failed: ${r.error?.message ?? r.stderr}`)
}

const tmpfsReason = tmpfsUnavailable()
const tmpfsTest = tmpfsReason ? skipping(test, tmpfsReason) : test

const fixture = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'write-child.mjs')

const prlimitReason = prlimitUnavailable()
const prlimitTest = prlimitReason ? skipping(test, prlimitReason) : test

const nobodyReason = windows ? 'no uids' : nobodyUnavailable()
const nobodyTest = nobodyReason ? skipping(test, nobodyReason) : test

/** Runs fixtures/write-child.mjs (`command` before it, `options` for the spawn): the outcome it prints. */
function childOutcome(command, options, request) {
  return new Promise((resolve) => {
    const [file, ...args] = [...command, process.execPath, fixture, JSON.stringify(request)]
    execFile(file, args, { timeout: 60_000, encoding: 'utf8', ...options }, (err, stdout, stderr) => {
      try {
        const { backend, outcome } = JSON.parse(stdout)
        resolve({ backendAsHere: backend === fairfs.backend, ...outcome })
      } catch {
        resolve({ exit: err?.code ?? 0, signal: err?.signal ?? null, stderr })
      }
    })
  })
}

/** A case's `run` for a child: the arguments are `[file, size, options]`. */
const inChild =
  (command, options = {}) =>
  (side, form, op, [file, size, opts]) =>
    childOutcome(command, options, { api: side === 'node' ? 'node' : 'fairfs', form, op, file, size, options: opts })

const MiB = 1024 * 1024
for (const form of FORMS) {
  tmpfsTest(`ENOSPC on a 64 KiB tmpfs, ${form}: the error and the partial file node:fs leaves`, async (t) => {
    const results = await everyForm(t, { dir: (t) => mountTmpfs(t, 'size=64k'), args: (dir) => [at(dir), pattern(MiB)] }, { ops: ['writeFile'], forms: [form] })
    const { ours } = results[`writeFile, ${form}`]
    t.like(ours.outcome.args?.[0]?.error ?? ours.outcome.rejected, { code: 'ENOSPC' })
    t.true(ours.file.size > 0 && ours.file.size < MiB, `partial file of ${ours.file.size} bytes`)
    // Appended to a file already there.
    const setup = (dir) => fs.writeFileSync(at(dir), pattern(10_000))
    await everyForm(t, { dir: (t) => mountTmpfs(t, 'size=64k'), setup, args: (dir) => [at(dir), pattern(MiB)] }, { ops: ['appendFile'], forms: [form] })
  })
}

tmpfsTest('EROFS on a read-only tmpfs: a new file, an existing one, flag r+: as node:fs, every form', async (t) => {
  const readOnly = (t) => {
    const dir = mountTmpfs(t, 'size=1m')
    existing(dir)
    remountReadOnly(dir)
    return dir
  }
  for (const [what, args] of Object.entries({
    'a new file': (dir) => [at(dir, 'new'), 'data'],
    'an existing file': (dir) => [at(dir), 'data'],
    'an existing file, flag r+': (dir) => [at(dir), 'data', { flag: 'r+' }],
  })) {
    const results = await everyForm(t, { dir: readOnly, args }, { label: `${what}: ` })
    const { outcome } = results['writeFile, callback'].ours
    t.is(outcome.args?.[0]?.error.code, 'EROFS', what)
  }
})

for (const form of FORMS) {
  prlimitTest(`EFBIG under a 64 KiB file size limit (prlimit), ${form}: the error and the partial file node:fs leaves`, async (t) => {
    const run = inChild(['prlimit', '--fsize=65536'])
    const results = await everyForm(t, { run, args: (dir) => [at(dir), MiB] }, { ops: ['writeFile'], forms: [form] })
    const { ours } = results[`writeFile, ${form}`]
    t.like(ours.outcome, { backendAsHere: true, error: { code: 'EFBIG', syscall: 'write' } })
    t.is(ours.file.size, 65536)
    t.is(ours.file.bytes, `sha256 ${sha256(pattern(65536))}`)
    // An append that crosses the limit, and one that starts at it.
    for (const start of [60_000, 65_536]) {
      const setup = (dir) => fs.writeFileSync(at(dir), pattern(start))
      await everyForm(t, { run, setup, args: (dir) => [at(dir), 10_000] }, { ops: ['appendFile'], forms: [form], label: `from ${start}: ` })
    }
  })
}

/** A fresh directory that uid 65534 can reach and not write in. */
function nobodyDir() {
  const dir = fs.mkdtempSync(path.join(scratch, 'acc-'))
  fs.chmodSync(dir, 0o755)
  return dir
}

for (const form of FORMS) {
  nobodyTest(`EACCES as uid ${NOBODY}, ${form}: a read-only file, a directory not writable: as node:fs, the file untouched`, async (t) => {
    const run = inChild([], { uid: NOBODY, gid: NOBODY })
    const readOnlyFile = (dir) => {
      existing(dir)
      fs.chmodSync(at(dir), 0o444)
    }
    const results = await everyForm(t, { dir: nobodyDir, setup: readOnlyFile, run, args: (dir) => [at(dir), 100] }, { forms: [form], label: 'a 0o444 file: ' })
    t.like(results[`writeFile, ${form}`].ours.outcome, { backendAsHere: true, error: { code: 'EACCES', syscall: 'open' } })
    t.is(results[`appendFile, ${form}`].ours.file.bytes, previous)
    await everyForm(t, { dir: nobodyDir, run, args: (dir) => [at(dir), 100] }, { forms: [form], label: 'a new file in a 0o755 root directory: ' })
  })
}

// ---------------------------------------------------------------------------------
// Many at once, on fairfs alone

/** `count` records of `length` bytes, each different: a tag and its number, then filler. */
function records(count, length, tag) {
  return Array.from({ length: count }, (_, i) => {
    const record = Buffer.alloc(length, 0x61 + (i % 26))
    record.write(`${tag}${String(i).padStart(6, '0')}:`)
    record[length - 1] = 0x0a
    return record
  })
}

/** Whether `file` is the records in some order, each whole and once; t.fail()s saying what is wrong. */
function holdsRecords(t, file, list, label) {
  const got = fs.readFileSync(file)
  const length = list[0].length
  const want = list.length * length
  if (got.length !== want) return t.fail(`${label}: ${got.length} bytes, ${want} expected`)
  const left = new Map(list.map((r) => [r.toString('latin1'), 1]))
  for (let i = 0; i < got.length; i += length) {
    const chunk = got.subarray(i, i + length).toString('latin1')
    if (left.get(chunk) !== 1) return t.fail(`${label}: at ${i}, ${JSON.stringify(chunk.slice(0, 40))}… is not a whole record not yet seen`)
    left.set(chunk, 0)
  }
  t.pass()
}

test('200 writeFiles of different files at once, in every form: each file whole, no fd left open', async (t) => {
  const jobs = Array.from({ length: 200 }, (_, i) => ({ file: tmpPath(`many-${i}`), data: crypto.randomBytes(i % 10 === 0 ? 700 * 1024 + i : 1000 + i * 37) }))
  const writeFile = fairfsFn('writeFile')
  const promisesWriteFile = fairfsFn('promises.writeFile')
  await Promise.all(
    jobs.map(({ file, data }, i) => {
      if (i % 3 === 0) return new Promise((resolve, reject) => writeFile(file, data, (err) => (err ? reject(err) : resolve())))
      return i % 3 === 1 ? writeFile(file, data) : promisesWriteFile(file, data)
    }),
  )
  const wrong = jobs.filter(({ file, data }) => !fs.readFileSync(file).equals(data)).map(({ file }) => path.basename(file))
  t.deepEqual(wrong, [])
  if (!windows) t.deepEqual(jobs.filter(({ file }) => fdsOpenOn(file) > 0).map(({ file }) => path.basename(file)), [])
})

for (const form of FORMS) {
  test(`50 appendFiles of 100-byte records to one file at once, ${form}: each record whole and once`, async (t) => {
    const file = tmpPath('records')
    const list = records(50, 100, 'r')
    const run = forms[form].ours
    const outcomes = await Promise.all(list.map((record) => run('appendFile', [file, record])))
    t.deepEqual(
      outcomes.filter((o) => o.threw || o.rejected || o.args?.[0]),
      [],
    )
    holdsRecords(t, file, list, form)
    if (!windows) t.is(fdsOpenOn(file), 0)
  })
}

// node:fs writes each buffer with one write(2) (looping only on a short write), and an
// O_APPEND write of a regular file is not interleaved with another: concurrent appends
// of records larger than fairfs's 512 KiB chunks land whole with node:fs. The same
// must hold on fairfs.
test('8 appendFiles of 1 MiB + 1 byte records to one file at once: each whole, as with node:fs', async (t) => {
  for (const side of SIDES) {
    const file = tmpPath(`big-records-${side}`)
    const list = records(8, MiB + 1, side)
    await Promise.all(list.map((record) => forms.callback[side]('appendFile', [file, record])))
    holdsRecords(t, file, list, side)
  }
})

// ---------------------------------------------------------------------------------
// install()

nativeOnly(test.serial)('install() routes fs.writeFile, fs.appendFile, their fs.promises and FileHandle forms through fairfs, with node:fs results; uninstall() restores them', async (t) => {
  const probe = await fs.promises.open(at(freshDir('probe')), 'w')
  const proto = Object.getPrototypeOf(probe)
  const nodeHandle = { writeFile: proto.writeFile, appendFile: proto.appendFile }
  await probe.close()
  const nodeNs = await import('node:fs/promises')

  fairfs.install()
  t.teardown(() => fairfs.uninstall())
  t.not(fs.writeFile, nodeFs.writeFile, 'fs.writeFile')
  t.not(fs.appendFile, nodeFs.appendFile, 'fs.appendFile')
  t.not(fs.promises.writeFile, nodeFs.promises.writeFile, 'fs.promises.writeFile')
  t.not(fs.promises.appendFile, nodeFs.promises.appendFile, 'fs.promises.appendFile')
  t.is(nodeNs.writeFile, fs.promises.writeFile, 'the ESM named export follows')

  // The patched functions against node:fs's own.
  const patched = {
    callback: (side, op, args) => callbackOutcome(side === 'node' ? nodeFs[op] : fs[op], args),
    promises: (side, op, args) => promiseOutcome(() => (side === 'node' ? nodeFs.promises : fs.promises)[op](...args)),
  }
  for (const [form, run] of Object.entries(patched)) {
    const c = { setup: existing, run: (side, _form, op, args) => run(side, op, args) }
    await everyForm(t, { ...c, args: (dir) => [at(dir), big] }, { forms: [form], label: 'a path: ' })
    await everyForm(t, { ...c, args: (dir) => [at(dir, 'missing/f'), 'data'] }, { forms: [form], label: 'ENOENT: ' })
    await everyForm(t, { ...c, args: (dir) => [at(dir), 1] }, { forms: [form], label: 'bad data: ' })
    await everyForm(t, { ...c, args: (dir) => [at(dir), 'data', { signal: aborted }] }, { forms: [form], label: 'aborted: ' })
  }
  await everyForm(t, { ...fdCase('r+'), run: (side, _form, op, args) => patched.callback(side, op, args) }, { forms: ['callback'], label: 'an fd: ' })

  // A FileHandle opened after install(): its writeFile and appendFile are fairfs's.
  for (const op of OPS) {
    const handleRun = (side, _form, _op, [handle, ...rest]) => promiseOutcome(() => (side === 'node' ? Reflect.apply(nodeHandle[op], handle, rest) : handle[op](...rest)))
    const results = await compare(t, 'promises', op, { ...handleCase('r+', { data: big }), run: handleRun }, 'handle.')
    t.is(results.ours.after.fd, 'open')
  }
  const handle = await fs.promises.open(at(freshDir('probe')), 'w')
  t.not(handle.writeFile, nodeHandle.writeFile, 'handle.writeFile')
  t.not(handle.appendFile, nodeHandle.appendFile, 'handle.appendFile')

  fairfs.uninstall()
  t.is(fs.writeFile, nodeFs.writeFile)
  t.is(fs.appendFile, nodeFs.appendFile)
  t.is(fs.promises.writeFile, nodeFs.promises.writeFile)
  t.is(fs.promises.appendFile, nodeFs.promises.appendFile)
  t.is(nodeNs.writeFile, nodeFs.promises.writeFile)
  t.is(handle.writeFile, nodeHandle.writeFile)
  t.is(handle.appendFile, nodeHandle.appendFile)
  await handle.close()
})

test(`the backend is ${fairfs.backend}${isNative ? '' : ': fairfs.writeFile and friends are node:fs there'}`, (t) => {
  for (const name of ['writeFile', 'appendFile', 'promises.writeFile', 'promises.appendFile']) t.is(typeof fairfsFn(name), 'function', name)
})

// Durability: what the callback reports is in the file, whatever happens to the process
// next; with `flush`, fsync comes before the close.
const durability = fileURLToPath(new URL('./fixtures/write-durability.mjs', import.meta.url))

test('a child killed with SIGKILL right after the callback leaves every byte in the file', async (t) => {
  const file = tmpPath('durable')
  const child = (await import('node:child_process')).spawn(process.execPath, [durability, 'kill', file], { stdio: ['ignore', 'pipe', 'inherit'] })
  const sha = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(String(d).trim())))
  child.kill('SIGKILL')
  await new Promise((resolve) => child.once('exit', resolve))
  t.is(crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex'), sha)
})

// Not under qemu-user, where strace would trace the emulator.
const straceMissing = windows || emulated ? 'not traced on this platform' : spawnSync('strace', ['-V']).status !== 0 ? 'no strace here' : null
;(straceMissing ? (title, fn) => test.skip(`${title} [${straceMissing}]`, fn) : test)('with flush, the file is fsynced before it is closed (strace)', (t) => {
  const file = tmpPath('flushed')
  const log = tmpPath('strace.log')
  // -y names each fd's file, so the calls on it are found whichever thread made them,
  // even where strace splits a call over two lines (<unfinished ...>).
  const run = spawnSync('strace', ['-f', '-qq', '-y', '-e', 'trace=fsync,close', '-o', log, process.execPath, durability, 'flush', file])
  t.is(run.status, 0, String(run.stderr))
  const lines = fs.readFileSync(log, 'utf8').split('\n')
  const on = (call) => lines.findIndex((l) => l.includes(`${call}(`) && l.includes(`<${file}>`))
  const [fsync, close] = [on('fsync'), on('close')]
  t.true(fsync >= 0, `an fsync of ${file}: ${lines.filter((l) => l.includes(file)).join(' | ')}`)
  t.true(close > fsync, 'its close after the fsync')
  t.is(fs.statSync(file).size, 64 * 1024)
})

// A FIFO whose reader leaves early: the write fails with EPIPE (the process ignores
// SIGPIPE, as Node does), on both sides.
posixOnly('no FIFOs', test)('a FIFO whose reader reads 10 bytes and leaves: EPIPE, as node:fs', async (t) => {
  const outcome = async (write) => {
    const fifo = tmpPath('fifo')
    spawnSync('mkfifo', [fifo])
    const reader = (await import('node:child_process')).spawn('head', ['-c', '10', fifo], { stdio: ['ignore', 'ignore', 'inherit'] })
    const err = await new Promise((resolve) => write(fifo, Buffer.alloc(1024 * 1024, 'p'), resolve))
    await new Promise((resolve) => (reader.exitCode !== null ? resolve() : reader.once('exit', resolve)))
    return describeError(err)
  }
  const node = await outcome((p, d, cb) => fs.writeFile(p, d, cb))
  const ours = await outcome((p, d, cb) => fairfs.writeFile(p, d, cb))
  t.is(node.code, 'EPIPE')
  t.deepEqual(ours, node)
})
