// The contention governor (src/contention.rs) at work. Run by `npm test` after the
// unit suite, one file at a time (ava.alone.config.mjs): what it measures is whether
// anything else uses the CPU, so nothing else of the suite may run meanwhile.
import os from 'node:os'
import fs from 'node:fs'
import { Worker } from 'node:worker_threads'
import crypto from 'node:crypto'
import zlib from 'node:zlib'
import test from 'ava'
import { fairfs, isNative, makeFile } from '../helpers.mjs'

/**
 * Reads 16 MiB files in ten loops until `until(stats)` holds or `ms` pass; returns the
 * last stats. `files`: how many different files the loops share.
 */
async function readBigUntil(until, ms, files = 10) {
  const made = Array.from({ length: files }, () => makeFile(16 * 1024 * 1024))
  const end = Date.now() + ms
  let done = false
  const loops = Array.from({ length: 10 }, async (_, i) => {
    const { path } = made[i % files]
    while (!done && Date.now() < end) {
      await fairfs.promises.readFile(path)
      if (until(fairfs.stats())) done = true
    }
  })
  await Promise.all(loops)
  for (const { path } of made) fs.rmSync(path)
  return fairfs.stats()
}

/** Lifts any cap, and starts the governor at every thread (a raised cap restarts it there). */
function startAtEveryThread(t) {
  fairfs.configure({ largeLimit: 1 })
  fairfs.configure({ largeLimit: 0 })
  t.is(fairfs.stats().largeLimit, fairfs.stats().threads, 'it starts with every thread')
}

const adaptive = isNative && fairfs.stats().largeLimitAdaptive
const adapts = adaptive ? test.serial : (title, fn) => test.skip(`${title} [no contention signal: the limit is fixed]`, fn)

adapts('next to threads that keep the CPU busy, the big-read limit backs off to one', async (t) => {
  t.timeout(90_000)
  startAtEveryThread(t)
  // Neighbours in this process, as zlib or crypto on libuv's pool would be: one
  // spinning worker_thread per core.
  const spinners = Array.from({ length: os.availableParallelism() }, () => new Worker(
    'const end = Date.now() + 60000; while (Date.now() < end) {}', { eval: true }))
  const backoffs = fairfs.stats().largeBackoffs
  let after
  try {
    after = await readBigUntil((s) => s.largeLimit === 1 && s.largeBackoffs > backoffs, 20_000)
  } finally {
    await Promise.all(spinners.map((w) => w.terminate()))
  }
  t.is(after.largeLimit, 1, `backed off ${after.largeBackoffs - backoffs} times`)
  // Climbing back once they stop is checked by the governor's unit tests only: end to
  // end, on Node 22 under CI load, V8's GC helpers (which count as neighbours) sometimes
  // sat between the two thresholds for 20–30 s, so the limit stayed at one.
})

adapts('next to a loop of small deflates on libuv\'s pool, the big-read limit goes to one', async (t) => {
  t.timeout(90_000)
  startAtEveryThread(t)
  // Node's benchmark/fs/readfile-partitioned.js, ten loops reading one file: little
  // CPU, but a steady user of libuv's threads, which four workers copying starve.
  // libuv names its threads from 1.50 (Node 22); on Node 20 the census at load found
  // them. Without that signal, the limit stayed at four here.
  let zipping = true
  let zips = 0
  const input = Buffer.alloc(1024, 'a')
  const zip = () => zlib.deflate(input, (err) => {
    if (err) throw err
    zips++
    if (zipping) zip()
  })
  zip()
  const backoffs = fairfs.stats().largeBackoffs
  let after
  try {
    after = await readBigUntil((s) => s.largeLimit === 1 && s.largeBackoffs > backoffs, 20_000, 1)
  } finally {
    zipping = false
  }
  t.true(zips > 0)
  t.is(after.largeLimit, 1, `backed off ${after.largeBackoffs - backoffs} times`)
})

adapts('work on libuv\'s pool while no big read runs is not held against the next burst', async (t) => {
  t.timeout(90_000)
  if (fairfs.stats().threads < 3) return t.pass('needs a limit that can fall by more than one')
  // Two worker_threads read with node:fs, then with fairfs, in turns: libuv's threads
  // were busy between two of the governor's looks, while the pool read no big file,
  // and a window judged over that gap took the limit straight to one for a burst that
  // had the machine to itself. A window mostly without big reads must not lower it.
  const files = Array.from({ length: 4 }, () => makeFile(16 * 1024 * 1024))
  const burst = async (ms) => {
    const end = Date.now() + ms
    await Promise.all(files.map(async ({ path }) => {
      while (Date.now() < end) await fairfs.promises.readFile(path)
    }))
  }
  const pbkdf2 = (iterations) => new Promise((resolve, reject) =>
    crypto.pbkdf2('secret', 'salt', iterations, 32, 'sha256', (err) => (err ? reject(err) : resolve())))
  // Iterations that keep a libuv thread busy for about 200 ms: a pause twice the
  // window, so that big reads ran for at most a third of the window that spans it.
  let iterations = 20_000
  for (let i = 0; i < 2; i++) {
    const t0 = performance.now()
    await pbkdf2(iterations)
    iterations = Math.max(1000, Math.round(iterations * 200 / (performance.now() - t0)))
  }
  const rounds = []
  for (let round = 0; round < 5; round++) {
    startAtEveryThread(t)
    // After 300 ms without big reads the governor starts afresh: a first look (a
    // baseline), then one window judged, at most one step down (V8's helpers count
    // as neighbours).
    await new Promise((resolve) => setTimeout(resolve, 350))
    await burst(150)
    const before = fairfs.stats().largeLimit
    // Two of libuv's threads busy on two cores, mostly within the 300 ms after which
    // a look starts afresh anyway (the previous build judged such a window and fell
    // to one).
    await Promise.all([pbkdf2(iterations), pbkdf2(iterations)])
    // The first look after the pause; then one more window. Judged over the pause,
    // libuv's demand would have taken the limit straight to one.
    await burst(150)
    rounds.push([before, fairfs.stats().largeLimit])
  }
  for (const { path } of files) fs.rmSync(path)
  const all = JSON.stringify(rounds)
  t.true(rounds.some(([before]) => before >= 3), `a round began high enough to tell a fall to one from a step down: ${all}`)
  t.true(rounds.every(([before, after]) => after >= before - 1), `limits before and after each pause: ${all}`)
})
