// The contention governor (src/contention.rs) at work. Run by `npm test` after the
// unit suite, one file at a time (ava.alone.config.mjs): what it measures is whether
// anything else uses the CPU, so nothing else of the suite may run meanwhile.
import os from 'node:os'
import fs from 'node:fs'
import { Worker } from 'node:worker_threads'
import test from 'ava'
import { fairfs, isNative, makeFile } from '../helpers.mjs'

/** Reads ten 16 MiB files in loops until `until(stats)` holds or `ms` pass; returns the last stats. */
async function readBigUntil(until, ms) {
  const files = Array.from({ length: 10 }, () => makeFile(16 * 1024 * 1024))
  const end = Date.now() + ms
  let done = false
  const loops = files.map(async ({ path }) => {
    while (!done && Date.now() < end) {
      await fairfs.promises.readFile(path)
      if (until(fairfs.stats())) done = true
    }
  })
  await Promise.all(loops)
  for (const { path } of files) fs.rmSync(path)
  return fairfs.stats()
}

const adaptive = isNative && fairfs.stats().largeLimitAdaptive
const adapts = adaptive ? test.serial : (title, fn) => test.skip(`${title} [no contention signal: the limit is fixed]`, fn)

adapts('with nothing else running, the big-read limit climbs above one', async (t) => {
  t.timeout(60_000)
  fairfs.configure({ largeLimit: 0 })
  const probes = fairfs.stats().largeProbes
  const after = await readBigUntil((s) => s.largeLimit >= 2 && s.largeProbes > probes, 20_000)
  t.true(after.largeLimit >= 2 && after.largeProbes > probes, `largeLimit ${after.largeLimit}, probes ${after.largeProbes - probes}`)
})

adapts('next to threads that keep the CPU busy, the big-read limit backs off to one', async (t) => {
  t.timeout(60_000)
  fairfs.configure({ largeLimit: 0 })
  const climbed = await readBigUntil((s) => s.largeLimit >= 2, 20_000)
  t.true(climbed.largeLimit >= 2, 'first it climbs, with nothing else running')
  // Then neighbours in this process, as zlib or crypto on libuv's pool would be: one
  // spinning worker_thread per core.
  const spinners = Array.from({ length: os.availableParallelism() }, () => new Worker(
    'const end = Date.now() + 30000; while (Date.now() < end) {}', { eval: true }))
  try {
    const backoffs = fairfs.stats().largeBackoffs
    const after = await readBigUntil((s) => s.largeLimit === 1 && s.largeBackoffs > backoffs, 20_000)
    t.is(after.largeLimit, 1, `backed off ${after.largeBackoffs - backoffs} times`)
    t.true(after.largeBackoffs > backoffs)
  } finally {
    await Promise.all(spinners.map((w) => w.terminate()))
  }
})
