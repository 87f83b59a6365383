// One fresh process's write measurements, run by node, Bun or Deno alike, through the
// node:fs API each runtime offers (what a server's code calls):
//   <runtime> write-probe.mjs <api> <dir> <quick> <part>
// <api> is node (node:fs), fairfs (node:fs after fairfs.install()), fairfs-behind (the
// same with configure({ writeBehind: true })), bun or deno (their node:fs). <part> is
// `files` (the writeFile cases) or `stream` (one WriteStream to a new file; the harness
// runs it in a process of its own, in an empty <dir>, after `sync`, so that no
// runtime's stream pays for the writeback of the files written before it). Writes
// files of its own under <dir>. Prints one JSON line.
import process from 'node:process'
import fs from 'node:fs'
import { Buffer } from 'node:buffer'
import { createRequire } from 'node:module'

const [api, dir, quickArg, part] = process.argv.slice(2)
const quick = quickArg === '1'
const ms = quick ? 400 : 1500
const KiB = 1024
const MiB = 1024 * KiB
const fairfs = api.startsWith('fairfs') ? createRequire(import.meta.url)('../../../index.js') : null
fairfs?.install()
if (api === 'fairfs-behind') fairfs.configure({ writeBehind: true })

/** writeFile/s of `size` bytes, `concurrency` loops each rewriting a file of its own. */
async function rate(size, concurrency) {
  const data = Buffer.alloc(size, 'w')
  let done = 0
  const t0 = performance.now()
  const end = t0 + ms
  await Promise.all(Array.from({ length: concurrency }, async (_, i) => {
    const file = `${dir}/${api}-${size}-${i}`
    while (performance.now() < end) {
      await fs.promises.writeFile(file, data)
      done++
    }
  }))
  return done / ((performance.now() - t0) / 1000)
}

/**
 * A 1 KiB fs.promises.writeFile every 5 ms while ten loops rewrite 64 MiB files of
 * their own: the small write's p99 in ms (what a server's small write waits for beside
 * big ones; the writefile bench's row, in every runtime).
 */
async function smallBesideBig() {
  const big = Buffer.alloc(64 * MiB, 'b')
  const small = Buffer.alloc(KiB, 's')
  let running = true
  const loops = Array.from({ length: 10 }, async (_, i) => {
    while (running) await fs.promises.writeFile(`${dir}/${api}-big-${i}`, big)
  })
  await new Promise((resolve) => setTimeout(resolve, 100))
  const took = []
  const end = performance.now() + ms
  while (performance.now() < end) {
    const t0 = performance.now()
    await fs.promises.writeFile(`${dir}/${api}-small`, small)
    took.push(performance.now() - t0)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  running = false
  await Promise.all(loops)
  took.sort((a, b) => a - b)
  return took[Math.min(took.length - 1, Math.floor(took.length * 0.99))]
}

/** GB/s of a `total`-byte fs.createWriteStream in `chunk`-byte writes that wait for 'drain'. */
async function stream(chunk, total) {
  const data = Buffer.alloc(chunk, 's')
  const file = `${dir}/${api}-stream`
  const t0 = performance.now()
  const ws = fs.createWriteStream(file)
  for (let written = 0; written < total; written += chunk) {
    if (!ws.write(data)) await new Promise((resolve) => ws.once('drain', resolve))
  }
  await new Promise((resolve, reject) => {
    ws.once('error', reject)
    ws.once('close', resolve)
    ws.end()
  })
  if (fs.statSync(file).size !== total) throw new Error(`the stream wrote ${fs.statSync(file).size} bytes`)
  return total / ((performance.now() - t0) / 1000) / 1e9
}

if (part === 'files') {
  console.log(JSON.stringify({
    write16Mc1: await rate(16 * MiB, 1),
    write16Mc10: await rate(16 * MiB, 10),
    write1Kc1: await rate(KiB, 1),
    small1KBesideBigP99ms: await smallBesideBig(),
  }))
} else if (part === 'stream') {
  console.log(JSON.stringify({ stream64K: await stream(64 * KiB, (quick ? 64 : 256) * MiB) }))
} else {
  throw new Error(`write-probe.mjs: <part> is files or stream, not ${part}`)
}
