// Faults and load: nothing lost, nothing leaked.
import test from 'ava'
import fs from 'node:fs'
import { constants } from 'node:buffer'
import { execFile, execFileSync, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { setImmediate as nextLoopTurn } from 'node:timers/promises'
import { fairfs, isNative, nativeOnly, needsRss, needsTestHooks, testHooksAddon, makeFile, tmpPath, openFdCount } from './helpers.mjs'

const child = fileURLToPath(new URL('./fixtures/child.mjs', import.meta.url))

test('EMFILE under a low fd limit: requests fail cleanly, leak nothing, and work again', async (t) => {
  const { path, data } = makeFile(200_000)
  const out = await new Promise((resolve, reject) =>
    execFile('sh', ['-c', `ulimit -n 64 && exec "${process.execPath}" "${child}" emfile "${path}"`], (err, stdout, stderr) =>
      err ? reject(new Error(stderr)) : resolve(JSON.parse(stdout)),
    ),
  )
  t.true(out.codes.ok > 0)
  t.deepEqual(Object.keys(out.codes).filter((k) => k !== 'ok' && k !== 'EMFILE'), [], JSON.stringify(out.codes))
  // The native backend admits only as many reads as it has descriptors for.
  if (isNative) t.deepEqual(out.codes, { ok: 300 })
  t.is(out.fdsAfter, out.fdsBefore, 'no fd leaked')
  t.is(out.afterLength, data.length)
})

test('a file deleted during the read is read in full (the fd keeps it)', async (t) => {
  const { path, data } = makeFile(16 * 1024 * 1024)
  const read = fairfs.readFile(path)
  setImmediate(() => fs.unlinkSync(path))
  t.true((await read).equals(data))
})

test('a file replaced during the read gives the old or the new content, never a mix', async (t) => {
  const { path, data } = makeFile(8 * 1024 * 1024)
  const { path: other, data: otherData } = makeFile(8 * 1024 * 1024)
  const read = fairfs.readFile(path)
  setImmediate(() => fs.renameSync(other, path))
  const got = await read
  t.true(got.equals(data) || got.equals(otherData))
})

nativeOnly(test.serial)('/dev/zero and an endless FIFO stop at the configured cap with ERR_FS_FILE_TOO_LARGE', async (t) => {
  fairfs.configure({ maxLength: 8 * 1024 * 1024 })
  t.teardown(() => fairfs.configure({ maxLength: constants.MAX_LENGTH }))
  const zero = await fairfs.readFile('/dev/zero').catch((e) => e)
  t.is(zero.code, 'ERR_FS_FILE_TOO_LARGE')
  t.true(zero instanceof RangeError)
  const fifo = tmpPath('endless')
  execFileSync('mkfifo', [fifo])
  const writer = spawn('sh', ['-c', `exec cat /dev/zero > "${fifo}"`], { stdio: 'ignore' })
  const exited = new Promise((resolve) => writer.on('exit', resolve))
  const endless = await fairfs.readFile(fifo).catch((e) => e)
  writer.kill()
  await exited
  t.is(endless.code, 'ERR_FS_FILE_TOO_LARGE')
  const { path } = makeFile(9 * 1024 * 1024)
  t.is((await fairfs.readFile(path).catch((e) => e)).code, 'ERR_FS_FILE_TOO_LARGE', 'regular files too')
})

needsRss(nativeOnly(test.serial))('10,000 requests at once complete with bounded memory', async (t) => {
  const { path, data } = makeFile(64 * 1024)
  const rssBefore = process.memoryUsage().rss
  const results = await Promise.all(Array.from({ length: 10_000 }, () => fairfs.readFile(path)))
  t.true(results.every((b) => b.length === data.length))
  const peak = process.memoryUsage().rss - rssBefore
  // The results themselves are 625 MiB; the queue adds little on top. Besides them
  // and V8's own growth, a fresh process (the soak test no longer runs first to warm it
  // up) holds the buffer pool (maxPooledBytes) and the buffers of admitted reads.
  const { maxPooledBytes } = fairfs.stats().pool
  t.true(peak < 10_000 * 64 * 1024 * 1.5 + maxPooledBytes + 64 * 1024 * 1024, `RSS grew ${peak}`)
  t.is(fairfs.stats().queued, 0)
})

nativeOnly(test)('the release addon carries no test hook: FAIRFS_TEST_PANIC_PATH changes nothing', async (t) => {
  const addon = process.env.NAPI_RS_NATIVE_LIBRARY_PATH ??
    fileURLToPath(new URL(`../fairfs.${process.platform}-${process.arch}-gnu.node`, import.meta.url))
  t.false(fs.readFileSync(addon).includes('FAIRFS_TEST_'), `${addon} names a FAIRFS_TEST_ variable`)
  const { path: file, data } = makeFile(100_000, 'panics-here')
  const script = `
    const fairfs = require(${JSON.stringify(fileURLToPath(new URL('../index.js', import.meta.url)))})
    fairfs.promises.readFile(${JSON.stringify(file)}).then((b) => console.log(b.length), (e) => console.log(e.code))`
  const out = execFileSync(process.execPath, ['-e', script], { env: { ...process.env, FAIRFS_TEST_PANIC_PATH: 'panics-here' }, timeout: 60_000 })
  t.is(String(out).trim(), String(data.length))
})

needsTestHooks(test)('a panic in a pool thread fails only its own read, with a clear error; the pool and the process go on', async (t) => {
  const { path: bad } = makeFile(100_000, 'panics-here')
  const { path: good, data } = makeFile(100_000)
  const script = `
    const fairfs = require(${JSON.stringify(fileURLToPath(new URL('../index.js', import.meta.url)))})
    const describe = (e) => ({ code: e.code, message: e.message })
    ;(async () => {
      const failed = await fairfs.promises.readFile(${JSON.stringify(bad)}).then(() => null, describe)
      const batch = await fairfs.readFiles([${JSON.stringify(good)}, ${JSON.stringify(bad)}], { settle: true })
      const after = await Promise.all(Array.from({ length: 8 }, () => fairfs.promises.readFile(${JSON.stringify(good)})))
      console.log(JSON.stringify({ failed, batch: batch.map((r) => r.status), after: after.map((b) => b.length), threads: fairfs.stats().threads }))
    })()`
  const out = await new Promise((resolve, reject) =>
    execFile(process.execPath, ['-e', script], { env: { ...process.env, FAIRFS_TEST_PANIC_PATH: 'panics-here', NAPI_RS_NATIVE_LIBRARY_PATH: testHooksAddon }, timeout: 60_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve({ ...JSON.parse(stdout), stderr }),
    ),
  )
  t.is(out.failed.code, 'ERR_FAIRFS_INTERNAL')
  t.regex(out.failed.message, /panicked while reading '.*panics-here'/)
  t.deepEqual(out.batch, ['fulfilled', 'rejected'])
  t.deepEqual(out.after, Array(8).fill(data.length))
  t.is(out.threads, 4)
  t.regex(out.stderr, /fairfs test fault/, 'the panic itself is on stderr')
})

nativeOnly(test.serial)('a source of unknown size stops at maxUnsizedLength; regular files do not', async (t) => {
  t.is(fairfs.stats().maxUnsizedLength, 2 ** 31 - 1, 'the default, whatever buffer.constants.MAX_LENGTH is')
  t.throws(() => fairfs.configure({ maxUnsizedLength: -1 }), { code: 'ERR_OUT_OF_RANGE' })
  fairfs.configure({ maxUnsizedLength: 4 * 1024 * 1024 })
  t.teardown(() => fairfs.configure({ maxUnsizedLength: 2 ** 31 - 1 }))
  const err = await fairfs.readFile('/dev/zero').catch((e) => e)
  t.is(err.code, 'ERR_FS_FILE_TOO_LARGE')
  t.is(err.message, `File size (${4 * 1024 * 1024 + 1}) is greater than ${4 * 1024 * 1024} bytes`)
  const { path, data } = makeFile(5 * 1024 * 1024)
  t.true((await fairfs.readFile(path)).equals(data), 'a regular file over the bound reads in full')
})

nativeOnly(test)('/dev/zero stops at 2 GiB by default, on every Node line, with memory near that bound', async (t) => {
  const script = `
    const fairfs = require(${JSON.stringify(fileURLToPath(new URL('../index.js', import.meta.url)))})
    fairfs.readFile('/dev/zero').then(
      () => console.log(JSON.stringify({ read: true })),
      (e) => console.log(JSON.stringify({ code: e.code, message: e.message, maxRssMiB: process.resourceUsage().maxRSS / 1024 })),
    )`
  const out = await new Promise((resolve, reject) =>
    execFile(process.execPath, ['-e', script], { timeout: 120_000 }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout)))),
  )
  t.is(out.code, 'ERR_FS_FILE_TOO_LARGE')
  t.is(out.message, `File size (${2 ** 31}) is greater than 2 GiB`)
  t.true(out.maxRssMiB < 2048 + 512, `peak RSS ${Math.round(out.maxRssMiB)} MiB`)
})
