// One fresh process's measurements, run by node, Bun or Deno alike:
//   <runtime> probe.mjs <api> <dir> <quick> [cases]
// <api> is node (fs.promises.readFile, fs.createReadStream), fairfs (the same calls of
// fairfs), bun (Bun.file().bytes(), Bun.file().stream()) or deno (Deno.readFile,
// Deno.open().readable). <dir> holds big-0..9 (16 MiB), small-0..999 (1 KiB) and
// huge.bin (256 MiB), written by the parent. [cases] is a comma-separated subset of
// big, small, latency, stream (all by default). Prints one JSON line.
import process from 'node:process'
import { createRequire } from 'node:module'

const [api, dir, quickArg, casesArg] = process.argv.slice(2)
const quick = quickArg === '1'
const cases = new Set((casesArg || 'big,small,latency,stream').split(','))
const ms = quick ? 400 : 1500
const require = createRequire(import.meta.url)
const fsLib = api === 'fairfs' ? require('../../../index.js') : api === 'node' ? require('node:fs') : null

function reader() {
  if (api === 'bun') return (p) => globalThis.Bun.file(p).bytes()
  if (api === 'deno') return (p) => globalThis.Deno.readFile(p)
  return fsLib.promises.readFile
}
const read = reader()

/**
 * Garbage collections while `fn` runs, where the runtime reports them (Node's
 * PerformanceObserver; null elsewhere): mark-compacts, scavenges and their total pause.
 */
async function withGc(fn) {
  let PerformanceObserver
  try {
    ({ PerformanceObserver } = await import('node:perf_hooks'))
  } catch {}
  const gc = { markCompacts: 0, scavenges: 0, pauseMs: 0 }
  let observer = null
  try {
    if (api === 'node' || api === 'fairfs') {
      observer = new PerformanceObserver((list) => {
        for (const e of list.getEntries()) {
          const kind = e.detail?.kind ?? e.kind
          if (kind === 1) gc.scavenges++
          else if (kind === 4) gc.markCompacts++
          gc.pauseMs += e.duration
        }
      })
      observer.observe({ entryTypes: ['gc'] })
    }
  } catch {
    observer = null
  }
  const value = await fn()
  // Entries arrive in a later task.
  await new Promise((resolve) => setTimeout(resolve, 20))
  observer?.disconnect()
  return { value, gc: observer ? gc : null }
}

/** `concurrency` loops over `files` for `ms`; reads/s, checking each result's size. */
async function rate(files, size, concurrency) {
  const end = performance.now() + ms
  const t0 = performance.now()
  let n = 0
  await Promise.all(Array.from({ length: concurrency }, async (_, i) => {
    for (let k = i; performance.now() < end; k += concurrency) {
      const data = await read(files[k % files.length])
      if (data.length !== size) throw new Error(`read ${data.length} bytes, expected ${size}`)
      n++
    }
  }))
  return n / ((performance.now() - t0) / 1000)
}

/**
 * A 1 KiB read every 2 ms for 3 s (as requests arrive, GC pauses included) while ten
 * loops re-read the 256 MiB file; latency of each from its issue, in ms, and the GB the
 * loops read meanwhile (a faster reader makes more garbage in the same 3 s).
 */
async function latencyUnderLoad(small, huge) {
  let on = true
  let measuring = false
  let bigReads = 0
  const load = Array.from({ length: 10 }, async () => {
    while (on) {
      await read(huge)
      if (measuring) bigReads++
    }
  })
  await new Promise((resolve) => setTimeout(resolve, 100))
  const lat = []
  const pending = []
  const duration = quick ? 1000 : 3000
  const { gc } = await withGc(async () => {
    measuring = true
    const end = performance.now() + duration
    let k = 0
    while (performance.now() < end) {
      const t = performance.now()
      pending.push(read(small[k++ % small.length]).then((data) => {
        if (data.length !== 1024) throw new Error(`read ${data.length} bytes`)
        lat.push(performance.now() - t)
      }))
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
    await Promise.all(pending)
    measuring = false
  })
  on = false
  await Promise.all(load)
  lat.sort((a, b) => a - b)
  const at = (p) => lat[Math.min(lat.length - 1, Math.floor(lat.length * p))]
  return { p50ms: at(0.5), p99ms: at(0.99), maxMs: lat[lat.length - 1], samples: lat.length, gc, bigGB: (bigReads * 256 * 1024 * 1024) / 1e9 }
}

/** Streams the 256 MiB file once through `consume`; GB/s. */
async function streamOnce(huge, highWaterMark, how) {
  const t0 = performance.now()
  let bytes = 0
  if (api === 'bun' || api === 'deno') {
    if (how !== 'for await' || highWaterMark) return null
    const stream = api === 'bun' ? globalThis.Bun.file(huge).stream() : (await globalThis.Deno.open(huge)).readable
    for await (const chunk of stream) bytes += chunk.length
  } else {
    const stream = fsLib.createReadStream(huge, highWaterMark ? { highWaterMark } : {})
    if (how === 'for await') {
      for await (const chunk of stream) bytes += chunk.length
    } else {
      await new Promise((resolve, reject) => {
        stream.on('data', (chunk) => { bytes += chunk.length })
        stream.on('end', resolve)
        stream.on('error', reject)
      })
    }
  }
  if (bytes !== 256 * 1024 * 1024) throw new Error(`streamed ${bytes} bytes`)
  return bytes / 1e9 / ((performance.now() - t0) / 1000)
}

/** Each stream case, best of none: the median of three passes, with the GCs they ran. */
async function streams(huge) {
  const out = {}
  for (const [key, hwm, how] of [
    ['streamForAwait', 0, 'for await'],
    ['streamData', 0, 'data'],
    ['stream1MiBForAwait', 1024 * 1024, 'for await'],
    ['stream1MiBData', 1024 * 1024, 'data'],
  ]) {
    const { value, gc } = await withGc(async () => {
      const runs = []
      for (let i = 0; i < (quick ? 1 : 3); i++) runs.push(await streamOnce(huge, hwm, how))
      return runs.includes(null) ? null : runs.sort((a, b) => a - b)[Math.floor(runs.length / 2)]
    })
    out[key] = value
    out[`${key}GcMs`] = gc && value !== null ? gc.pauseMs : null
  }
  return out
}

const big = Array.from({ length: 10 }, (_, i) => `${dir}/big-${i}`)
const small = Array.from({ length: 1000 }, (_, i) => `${dir}/small-${i}`)
const huge = `${dir}/huge.bin`
const out = {}
if (cases.has('big')) {
  for (const c of [1, 10]) {
    const { value, gc } = await withGc(() => rate(big, 16 * 1024 * 1024, c))
    out[`big${c}`] = value
    out[`big${c}MarkCompacts`] = gc?.markCompacts ?? null
    out[`big${c}GcMs`] = gc?.pauseMs ?? null
  }
}
if (cases.has('small')) {
  out.small1 = await rate(small, 1024, 1)
  out.small10 = await rate(small, 1024, 10)
}
if (cases.has('latency')) {
  const l = await latencyUnderLoad(small, huge)
  Object.assign(out, { p50ms: l.p50ms, p99ms: l.p99ms, maxMs: l.maxMs, latencySamples: l.samples })
  out.latencyMarkCompacts = l.gc?.markCompacts ?? null
  out.latencyGcMs = l.gc?.pauseMs ?? null
  out.latencyGcMsPerGB = l.gc && l.bigGB > 0 ? l.gc.pauseMs / l.bigGB : null
}
if (cases.has('stream')) Object.assign(out, await streams(huge))
out.peakRssMB = typeof process.resourceUsage === 'function' ? process.resourceUsage().maxRSS / 1024 : null
console.log(JSON.stringify(out))
