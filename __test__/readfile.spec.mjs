// readFile and promises.readFile, differential against node:fs: paths, URLs, fds, FileHandles,
// flags, encodings, errors field by field, and many mixed reads at once.
import test from 'ava'
import fs from 'node:fs'
import { pathToFileURL } from 'node:url'
import { fairfs, isNative, nativeOnly, makeFile, tmpPath, bothCallback, bothPromise, viaCallback, describeError, posixOnly, noProc, windows } from './helpers.mjs'

const sizes = [0, 1, 64 * 1024 - 1, 64 * 1024, 1024 * 1024 + 1, 16 * 1024 * 1024]

for (const len of sizes) {
  test(`size ${len}: same bytes as node:fs, callback and promise`, async (t) => {
    const { path, data } = makeFile(len)
    const cb = await bothCallback(path)
    t.deepEqual(cb.ours, cb.node)
    t.is(cb.ours.length, len)
    t.true(cb.ours.async, 'callback runs asynchronously')
    const p = await bothPromise(path)
    t.deepEqual(p.ours, p.node)
    t.true((await fairfs.readFile(path)).equals(data))
  })
}

const encodings = ['utf8', 'utf-8', 'UTF8', 'latin1', 'binary', 'ascii', 'base64', 'base64url', 'hex', 'ucs2', 'utf16le', 'buffer', null, undefined]
for (const encoding of encodings) {
  test(`encoding ${encoding}: as a string option and in an object`, async (t) => {
    const { path } = makeFile(70_001)
    for (const options of [encoding, { encoding }]) {
      const cb = await bothCallback(path, options)
      t.deepEqual(cb.ours, cb.node)
      const p = await bothPromise(path, options)
      t.deepEqual(p.ours, p.node)
    }
  })
}

// Serial: configure() is process-wide, and concurrent tests would read with its chunk size.
test.serial('multi-byte utf8 split across chunk boundaries decodes like node:fs', async (t) => {
  fairfs.configure({ chunkSize: 4096 })
  t.teardown(() => fairfs.configure({ chunkSize: 512 * 1024 }))
  const path = tmpPath('utf8')
  fs.writeFileSync(path, 'ü€😀…'.repeat(10_000))
  const cb = await bothCallback(path, 'utf8')
  t.deepEqual(cb.ours, cb.node)
  t.is(cb.ours.value, 'ü€😀…'.repeat(10_000))
})

test('Buffer, Uint8Array and file: URL paths', async (t) => {
  const { path, data } = makeFile(5000)
  for (const p of [Buffer.from(path), new Uint8Array(Buffer.from(path)), pathToFileURL(path)]) {
    const cb = await bothCallback(p)
    t.deepEqual(cb.ours, cb.node)
    t.true((await fairfs.promises.readFile(p)).equals(data))
  }
})

test('an fd is read from its current position and is not closed', async (t) => {
  const path = tmpPath('fd')
  fs.writeFileSync(path, 'Hello World')
  const fd = fs.openSync(path, 'r')
  t.teardown(() => fs.closeSync(fd))
  fs.readSync(fd, Buffer.alloc(5), 0, 5, null)
  const ours = await new Promise((resolve, reject) => fairfs.readFile(fd, 'utf8', (e, d) => (e ? reject(e) : resolve(d))))
  t.is(ours, ' World')
  // Still open: node:fs can use it, and it is at the end now.
  t.is(fs.readFileSync(fd, 'utf8'), '')
  t.is(fs.fstatSync(fd).size, 11)
  // The promise form of readFile takes an fd too.
  fs.readSync(fd, Buffer.alloc(0), 0, 0, 0)
  const fd2 = fs.openSync(path, 'r')
  t.teardown(() => fs.closeSync(fd2))
  t.is(await fairfs.readFile(fd2, 'utf8'), 'Hello World')
})

test('an empty fd and an empty file give an empty Buffer or string', async (t) => {
  const path = tmpPath('empty')
  fs.writeFileSync(path, '')
  const fd = fs.openSync(path, 'r')
  t.teardown(() => fs.closeSync(fd))
  for (const target of [path, fd]) {
    const cb = await bothCallback(target)
    t.deepEqual(cb.ours, cb.node)
    t.is(cb.ours.length, 0)
    const s = await bothCallback(target, 'utf8')
    t.deepEqual(s.ours, { async: true, value: '' })
  }
})

test('a FileHandle is read from its position and not closed; promises reject plain fds', async (t) => {
  const path = tmpPath('fh')
  fs.writeFileSync(path, 'Hello World')
  const handle = await fs.promises.open(path, 'r')
  t.teardown(() => handle.close())
  await handle.read(Buffer.alloc(6), 0, 6, null)
  t.is(await fairfs.promises.readFile(handle, 'utf8'), 'World')
  t.is((await handle.stat()).size, 11, 'handle still usable')
  const fd = fs.openSync(path, 'r')
  t.teardown(() => fs.closeSync(fd))
  const p = await bothPromise(fd)
  t.deepEqual(p.ours, p.node)
  t.is(p.ours.error.code, 'ERR_INVALID_ARG_TYPE')
})

test('a closed FileHandle fails like node:fs', async (t) => {
  const { path } = makeFile(10)
  const handle = await fs.promises.open(path, 'r')
  await handle.close()
  const p = await bothPromise(handle)
  t.deepEqual(p.ours, p.node)
  t.is(p.ours.error.code, 'ERR_OUT_OF_RANGE')
})

test('flags: a+ creates the file, ax+ and wx fail with EEXIST, r fails with ENOENT', async (t) => {
  const created = [tmpPath('a-plus-node'), tmpPath('a-plus-ours')]
  t.deepEqual(await viaBoth(created, { flag: 'a+', encoding: 'utf8' }), 'same')
  t.true(fs.existsSync(created[1]))
  const { path } = makeFile(3)
  for (const flag of ['ax+', 'wx', 'r']) {
    const target = flag === 'r' ? tmpPath('missing') : path
    const cb = await bothCallback(target, { flag })
    t.deepEqual(cb.ours, cb.node)
    t.is(cb.ours.error.code, flag === 'r' ? 'ENOENT' : 'EEXIST')
  }
  const options = { flag: 'a+' }
  await fairfs.readFile(tmpPath('a-plus-again'), options)
  t.deepEqual(options, { flag: 'a+' }, 'options object is not mutated')
})

/** Runs node:fs on paths[0] and fairfs on paths[1] and compares. */
async function viaBoth(paths, options) {
  const node = await fs.promises.readFile(paths[0], options)
  const ours = await fairfs.promises.readFile(paths[1], options)
  return node === ours ? 'same' : { node, ours }
}

test('ENOENT, ENOTDIR and EISDIR match node:fs field by field', async (t) => {
  const { path: file } = makeFile(10)
  for (const target of [tmpPath('nope'), `${file}/child`, fs.mkdtempSync(tmpPath('dir'))]) {
    const cb = await bothCallback(target)
    t.deepEqual(cb.ours, cb.node)
    const p = await bothPromise(target)
    t.deepEqual(p.ours, p.node)
    t.regex(cb.ours.error.code, /^(ENOENT|ENOTDIR|EISDIR)$/)
  }
})

posixOnly(noProc, test)('/proc files whose stat size is 0 are read to EOF', async (t) => {
  for (const target of ['/proc/sys/kernel/hostname', '/proc/version', '/proc/self/cmdline']) {
    const cb = await bothCallback(target, 'utf8')
    t.deepEqual(cb.ours, cb.node)
    t.true(cb.ours.value.length > 0)
  }
})

// On Windows a caller's fd goes to node:fs on either backend (lib/native-api.js, kForeignFds).
const ownFdRead = isNative && !windows
test(ownFdRead ? 'EBADF for an fd that is not open (node:fs 20 mis-reports it)' : 'an fd that is not open fails as in node:fs (node backend, or Windows)', async (t) => {
  const err = await fairfs.readFile(2 ** 30).catch((e) => e)
  if (ownFdRead) t.like(err, { code: 'EBADF', errno: -9, syscall: 'fstat', message: 'EBADF: bad file descriptor, fstat' })
  else t.deepEqual(describeError(err), (await viaCallback((cb) => fs.readFile(2 ** 30, cb))).error)
})

test('a negative fd is ERR_OUT_OF_RANGE, delivered instead of crashing as node:fs does', async (t) => {
  const err = await new Promise((resolve) => fairfs.readFile(-1, (e) => resolve(e)))
  t.true(err instanceof RangeError)
  t.is(err.code, 'ERR_OUT_OF_RANGE')
  t.is(err.message, 'The value of "fd" is out of range. It must be >= 0 && <= 2147483647. Received -1')
})

test('a file larger than the limit is ERR_FS_FILE_TOO_LARGE', async (t) => {
  const { constants } = await import('node:buffer')
  const path = tmpPath('sparse')
  // A sparse file just over the limit costs no disk space (skipped if the
  // filesystem cannot hold a file that large).
  try {
    fs.closeSync(fs.openSync(path, 'w'))
    fs.truncateSync(path, Math.min(constants.MAX_LENGTH + 1, 2 ** 52))
  } catch {
    t.pass('filesystem cannot create the sparse file; covered by the cargo test too_large_fails_before_reading')
    return
  }
  t.teardown(() => fs.rmSync(path))
  const err = await fairfs.readFile(path).catch((e) => e)
  t.true(err instanceof RangeError)
  t.is(err.code, 'ERR_FS_FILE_TOO_LARGE')
  t.regex(err.message, /^File size \(\d+\) is greater than /)
})

const over2GiB = isNative ? 'files over 2 GiB (node:fs refuses them) are read in full' : 'files over 2 GiB fail with ERR_FS_FILE_TOO_LARGE as in node:fs (node backend)'
test(over2GiB, async (t) => {
  const path = tmpPath('over2g')
  const size = 2 ** 31 + 4096
  try {
    fs.closeSync(fs.openSync(path, 'w'))
    fs.truncateSync(path, size)
  } catch {
    t.pass('filesystem cannot create a sparse 2 GiB file')
    return
  }
  t.teardown(() => fs.rmSync(path))
  const fd = fs.openSync(path, 'r+')
  fs.writeSync(fd, Buffer.from('tail!'), 0, 5, size - 5)
  fs.closeSync(fd)
  const nodeErr = await fs.promises.readFile(path).catch((e) => e)
  t.is(nodeErr.code, 'ERR_FS_FILE_TOO_LARGE')
  if (!isNative) {
    t.deepEqual(describeError(await fairfs.readFile(path).catch((e) => e)), describeError(nodeErr))
    return
  }
  let data = await fairfs.readFile(path)
  t.is(data.length, size)
  t.is(data.toString('latin1', size - 5), 'tail!')
  t.is(data[12345], 0)
  data = null
})

nativeOnly(test)('readFile(filehandle) holds the handle: close() waits for the read, which gets the whole file', async (t) => {
  const { path, data } = makeFile(64 * 1024 * 1024)
  for (const read of [(h) => fairfs.promises.readFile(h), (h) => fairfs.readFile(h)]) {
    const h = await fs.promises.open(path)
    const reading = read(h)
    const closed = h.close()
    const [got] = await Promise.all([reading, closed])
    t.true(got.equals(data), 'the whole file, not EBADF or another file on a reused fd')
    t.is(h.fd, -1)
  }
})

test('2,000 concurrent mixed reads are all byte-correct', async (t) => {
  const sizes = [0, 1, 100, 4096, 65_536, 300_000, 1_048_577, 3_000_000]
  const files = sizes.map((n) => makeFile(n))
  const jobs = []
  for (let i = 0; i < 2000; i++) {
    const { path, data } = files[i % files.length]
    const kind = i % 4
    if (kind === 0) jobs.push(fairfs.readFile(path).then((got) => got.equals(data)))
    else if (kind === 1) jobs.push(fairfs.promises.readFile(path, 'latin1').then((got) => got === data.toString('latin1')))
    else if (kind === 2) jobs.push(new Promise((resolve) => fairfs.readFile(path, (e, got) => resolve(!e && got.equals(data)))))
    else jobs.push(fairfs.readFile(path, { encoding: 'base64' }).then((got) => got === data.toString('base64')))
  }
  const ok = await Promise.all(jobs)
  t.is(ok.filter(Boolean).length, 2000)
})
