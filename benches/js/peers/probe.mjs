// The peers benchmark's measuring process, run by node, Bun or Deno alike:
//   <runtime> probe.mjs <api> <dir> <quick>
// <api> is node (fs.promises.readFile), fairfs (fairfs.promises.readFile), bun
// (Bun.file().bytes()) or deno (Deno.readFile). <dir> holds big-0..9 (16 MiB),
// small-0..999 (1 KiB) and huge.bin (256 MiB), written by the parent. Prints one JSON
// line with reads/s for each case and the 1 KiB p99 (ms) next to ten huge readers.
import process from 'node:process'
import { createRequire } from 'node:module'

const [api, dir, quickArg] = process.argv.slice(2)
const quick = quickArg === '1'
const ms = quick ? 400 : 1500

function reader() {
  if (api === 'bun') return (p) => globalThis.Bun.file(p).bytes()
  if (api === 'deno') return (p) => globalThis.Deno.readFile(p)
  const require = createRequire(import.meta.url)
  if (api === 'fairfs') return require('../../../index.js').promises.readFile
  return require('node:fs').promises.readFile
}
const read = reader()

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

/** p99 latency (ms) of back-to-back 1 KiB reads while ten loops re-read the 256 MiB file. */
async function p99UnderLoad(small, huge) {
  let on = true
  const load = Array.from({ length: 10 }, async () => {
    while (on) await read(huge)
  })
  await new Promise((resolve) => setTimeout(resolve, 50))
  const lat = []
  const end = performance.now() + ms
  let k = 0
  while (performance.now() < end) {
    const t = performance.now()
    await read(small[k++ % small.length])
    lat.push(performance.now() - t)
  }
  on = false
  await Promise.all(load)
  lat.sort((a, b) => a - b)
  return lat[Math.min(lat.length - 1, Math.floor(lat.length * 0.99))]
}

const big = Array.from({ length: 10 }, (_, i) => `${dir}/big-${i}`)
const small = Array.from({ length: 1000 }, (_, i) => `${dir}/small-${i}`)
const out = {
  big1: await rate(big, 16 * 1024 * 1024, 1),
  big10: await rate(big, 16 * 1024 * 1024, 10),
  small1: await rate(small, 1024, 1),
  small10: await rate(small, 1024, 10),
  p99ms: await p99UnderLoad(small, `${dir}/huge.bin`),
}
console.log(JSON.stringify(out))
