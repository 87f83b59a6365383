// One process's measurements on a slow mount, for the slow-storage benchmark:
//   node [--import fairfs/register] probe.mjs <mountpoint> <localdir> <quick> <daemon pid>
// The mount (fixtures/slowfs.py, every request delayed) holds d0..d63/f0..f3 (4 KiB
// each) and big0..big3 (8 MiB); <localdir> holds small (1 KiB) and mid (1 MiB). Prints
// one JSON line, then stops the daemon (SIGSTOP) under 16 reads, prints "exiting" and
// calls process.exit(): the benchmark times the exit and lets the daemon go on.
import fs from 'node:fs'
import path from 'node:path'
import { percentile } from '../common.mjs'
import { stopProcess } from '../../../__test__/fixtures/slowfs.mjs'
import { heartbeat } from '../../../__test__/fixtures/heartbeat.mjs'

const [mount, localDir, quickArg, daemonPid] = process.argv.slice(2)
const quick = quickArg === '1'
const fsp = fs.promises
const names = []
for (let d = 0; d < 64; d++) for (let f = 0; f < 4; f++) names.push(path.join(mount, `d${d}`, `f${f}`))

/** Runs `op` over `items` with `concurrency` in flight; ops per second. */
async function rate(items, concurrency, op) {
  let next = 0
  const t0 = performance.now()
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) await op(items[next++])
  }))
  return items.length / ((performance.now() - t0) / 1000)
}

const out = {}
// Cold: the mount is fresh, so every name is looked up and every stat asked of the daemon.
out.stats64 = await rate(names, 64, (p) => fsp.stat(p))
out.reads64 = await rate(names, 64, (p) => fsp.readFile(p))
let t0 = performance.now()
await fsp.readFile(path.join(mount, 'big0'))
out.bigMBps = 8 / ((performance.now() - t0) / 1000) * 1.048576
// A local 1 KiB read and a stat every 5 ms while four readers loop over the mount's big files.
const small = path.join(localDir, 'small')
let running = true
const readers = [0, 1, 2, 3].map(async (i) => {
  while (running) await fsp.readFile(path.join(mount, `big${i}`))
})
const latencies = []
const end = performance.now() + (quick ? 1000 : 2000)
while (performance.now() < end) {
  t0 = performance.now()
  await fsp.readFile(small)
  await fsp.stat(small)
  latencies.push(performance.now() - t0)
  await new Promise((resolve) => setTimeout(resolve, 5))
}
running = false
await Promise.all(readers)
out.localP99ms = percentile(latencies, 99)
out.localP50ms = percentile(latencies, 50)

// Hung: the daemon stops while 16 reads wait on it. Local triples done within 250 ms
// each over a second, and the event loop's largest gap meanwhile.
stopProcess(+daemonPid) // returns once all its threads are stopped
for (const name of names.slice(0, 16)) fsp.readFile(name).catch(() => {})
const mid = path.join(localDir, 'mid')
const triple = async () => {
  await fsp.readFile(small)
  await fsp.stat(small)
  await fsp.readFile(mid)
}
const beat = heartbeat()
const hungEnd = performance.now() + 1000
let triples = 0
while (performance.now() < hungEnd) {
  const done = await Promise.race([triple().then(() => true), new Promise((resolve) => setTimeout(resolve, 250, false))])
  if (!done) break
  triples++
}
await new Promise((resolve) => setTimeout(resolve, Math.max(0, hungEnd - performance.now())))
out.hungGapMs = beat.stop()
out.hungTriples = triples
console.log(JSON.stringify(out))
// The reads still wait on the stopped daemon: the benchmark times this exit.
console.log('exiting')
process.exit(0)
