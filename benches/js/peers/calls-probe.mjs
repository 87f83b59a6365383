// One fresh process's small-call measurements, run by node, Bun or Deno alike, through
// the node:fs API each runtime offers:
//   <runtime> calls-probe.mjs <api> <dir> <quick>
// <api> is node (node:fs; the harness also runs it with UV_THREADPOOL_SIZE=64), fairfs
// (node:fs after fairfs.install()), bun or deno. <dir> holds `file` (1 KiB) and `dir/`
// (100 entries), made by the harness. Each case runs at c=1 and c=64 (that many loops,
// each issuing its next call when the last completes) and reports calls/s and the CPU
// the JS thread spent per call, in µs (/proc's utime + stime of the main thread, so
// the pool threads' work is not in it). node also reports each call's synchronous
// form (fs.statSync & co.) in µs: the system call's own cost here, the floor.
// Prints one JSON line.
import process from 'node:process'
import fs from 'node:fs'
import path from 'node:path'
import { Buffer } from 'node:buffer'
import { createRequire } from 'node:module'

const [api, dir, quickArg] = process.argv.slice(2)
const ms = quickArg === '1' ? 300 : 1000
if (api === 'fairfs') createRequire(import.meta.url)('../../../index.js').install()

const file = path.join(dir, 'file')
const missing = path.join(dir, 'no-such-file')
const folder = path.join(dir, 'dir')
const kib = Buffer.alloc(1024, 'k')
const line = Buffer.from('a log line, 16B\n')
const fsp = fs.promises
const callback = (fn) => new Promise((resolve, reject) => fn((err) => (err ? reject(err) : resolve())))

/**
 * The cases: `run(loop)` makes one call (loop is the loop's index, for files of its
 * own), `sync()` its synchronous form. `setUp`/`tearDown` hold what a case needs open.
 */
let logFd
const CASES = {
  statHit: { run: () => fsp.stat(file), sync: () => fs.statSync(file) },
  statMiss: {
    run: () => fsp.stat(missing).then(() => { throw new Error(`${missing} exists`) }, (err) => { if (err.code !== 'ENOENT') throw err }),
    sync: () => fs.statSync(missing, { throwIfNoEntry: false }),
  },
  statCallback: { run: () => callback((cb) => fs.stat(file, cb)), sync: () => fs.statSync(file) },
  access: { run: () => fsp.access(file), sync: () => fs.accessSync(file) },
  readFile1K: {
    run: () => fsp.readFile(file).then((b) => { if (b.length !== 1024) throw new Error(`read ${b.length} bytes`) }),
    sync: () => fs.readFileSync(file),
  },
  readdir100: {
    run: () => fsp.readdir(folder).then((names) => { if (names.length !== 100) throw new Error(`${names.length} names`) }),
    sync: () => fs.readdirSync(folder),
  },
  openClose: {
    run: () => new Promise((resolve, reject) => fs.open(file, 'r', (err, fd) => (err ? reject(err) : fs.close(fd, (e) => (e ? reject(e) : resolve()))))),
    sync: () => fs.closeSync(fs.openSync(file, 'r')),
  },
  write16: {
    setUp: () => { logFd = fs.openSync(path.join(dir, `log-${api}`), 'a') },
    run: () => callback((cb) => fs.write(logFd, line, cb)),
    sync: () => fs.writeSync(logFd, line),
    tearDown: () => fs.closeSync(logFd),
  },
  writeFile1K: {
    run: (loop) => fsp.writeFile(path.join(dir, `out-${api}-${loop}`), kib),
    sync: () => fs.writeFileSync(path.join(dir, `out-${api}-sync`), kib),
  },
}

/** CPU time of this process's main thread (the JS thread), in µs. */
function jsThreadCpuUs() {
  const stat = fs.readFileSync(`/proc/${process.pid}/task/${process.pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100 // utime + stime, in 1/100 s
}

/** `concurrency` loops of `run` for `ms`: calls/s and the JS thread's µs per call. */
async function measure(run, concurrency) {
  let calls = 0
  const cpu0 = jsThreadCpuUs()
  const t0 = performance.now()
  const end = t0 + ms
  await Promise.all(Array.from({ length: concurrency }, async (_, loop) => {
    while (performance.now() < end) {
      await run(loop)
      calls++
    }
  }))
  const seconds = (performance.now() - t0) / 1000
  return { rate: calls / seconds, cpuUs: (jsThreadCpuUs() - cpu0) / calls }
}

/** µs per call of `fn` called back to back. */
function syncUs(fn) {
  let calls = 0
  const t0 = performance.now()
  const end = t0 + ms / 2
  while (performance.now() < end) {
    fn()
    calls++
  }
  return ((performance.now() - t0) * 1000) / calls
}

// CALLS_ONLY=write16,readdir100 runs only those cases (to look into one row).
const only = process.env.CALLS_ONLY?.split(',')
const out = {}
for (const [name, { setUp, run, sync, tearDown }] of Object.entries(CASES)) {
  if (only && !only.includes(name)) continue
  setUp?.()
  await measure(run, 8) // warm-up: JIT, the pool's threads, the page cache
  for (const c of [1, 64]) {
    const { rate, cpuUs } = await measure(run, c)
    out[`${name}.c${c}`] = rate
    out[`${name}.c${c}.cpuUs`] = cpuUs
  }
  if (api === 'node') out[`${name}.syncUs`] = syncUs(sync)
  tearDown?.()
}
console.log(JSON.stringify(out))
