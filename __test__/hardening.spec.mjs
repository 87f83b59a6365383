// Faults and load: nothing lost, nothing leaked.
import test from 'ava'
import fs from 'node:fs'
import { constants } from 'node:buffer'
import { execFile, execFileSync, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { setImmediate as nextLoopTurn } from 'node:timers/promises'
import { fairfs, isNative, nativeOnly, needsRss, makeFile, tmpPath, openFdCount } from './helpers.mjs'

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

needsRss(nativeOnly(test.serial))('300,000 reads with random aborts: no fd leaked, pool memory back, RSS stable', async (t) => {
  const files = Array.from({ length: 16 }, (_, i) => makeFile(512 + i * 12_000))
  const fdsBefore = openFdCount()
  let ok = 0
  let aborted = 0
  let rssAfterWarmup = 0
  // RSS at the last checkpoints: a leak raises all of them, while GC timing only
  // raises some, so their minimum is what is compared.
  const lateRss = []
  const rounds = 600
  const perRound = 500
  for (let round = 0; round < rounds; round++) {
    const batch = []
    for (let i = 0; i < perRound; i++) {
      const { path, data } = files[(round * perRound + i) % files.length]
      const controller = new AbortController()
      batch.push(
        fairfs.readFile(path, { signal: controller.signal }).then(
          (got) => {
            if (got.length !== data.length) t.fail('wrong length')
            ok++
          },
          (err) => {
            if (err.code !== 'ABORT_ERR') t.fail(err.message)
            aborted++
          },
        ),
      )
      const r = Math.random()
      if (r < 0.2) controller.abort()
      else if (r < 0.4) setImmediate(() => controller.abort())
    }
    await Promise.all(batch)
    if (round % 20 === 19) {
      // Let V8 free what the reads left behind (ArrayBuffers are swept concurrently,
      // and pooled memory comes back through finalizers) before sampling RSS.
      for (let i = 0; i < 2; i++) {
        globalThis.gc()
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      // The warm-up's high-water mark: pools and caches have filled by then.
      // Node 24 keeps growing its heaps for ~150,000 reads before RSS levels off.
      if (round <= 399) rssAfterWarmup = Math.max(rssAfterWarmup, process.memoryUsage().rss)
      if (round >= rounds - 60) lateRss.push(process.memoryUsage().rss)
    }
  }
  const rss = Math.min(...lateRss)
  // Finalizers return pooled memory a loop turn or more after GC.
  for (let i = 0; i < 50 && fairfs.stats().pool.outstanding > 0; i++) {
    globalThis.gc()
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  t.is(ok + aborted, rounds * perRound)
  t.true(aborted > rounds * perRound * 0.15, `aborted ${aborted}`)
  t.is(openFdCount(), fdsBefore, 'fds leaked')
  t.is(fairfs.stats().pool.outstanding, 0, 'every pooled buffer came back')
  t.true(rss < rssAfterWarmup * 1.1, `RSS grew from ${rssAfterWarmup} to ${rss}`)
  t.log(`ok ${ok}, aborted ${aborted}, RSS warm-up high ${(rssAfterWarmup / 2 ** 20).toFixed(1)} MiB, lowest of the last three checkpoints ${(rss / 2 ** 20).toFixed(1)} MiB`)
})

needsRss(nativeOnly(test.serial))('10,000 requests at once complete with bounded memory', async (t) => {
  const { path, data } = makeFile(64 * 1024)
  const rssBefore = process.memoryUsage().rss
  const results = await Promise.all(Array.from({ length: 10_000 }, () => fairfs.readFile(path)))
  t.true(results.every((b) => b.length === data.length))
  const peak = process.memoryUsage().rss - rssBefore
  // The results themselves are 625 MiB; the queue adds little on top.
  t.true(peak < 10_000 * 64 * 1024 * 1.5, `RSS grew ${peak}`)
  t.is(fairfs.stats().queued, 0)
})

nativeOnly(test)('a panic in a pool thread fails only its own read, with a clear error; the pool and the process go on', async (t) => {
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
    execFile(process.execPath, ['-e', script], { env: { ...process.env, FAIRFS_TEST_PANIC_PATH: 'panics-here' }, timeout: 60_000 }, (err, stdout, stderr) =>
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
