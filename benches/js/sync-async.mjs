// sync-vs-async: the readFileSync-vs-readFile matrix (sync loop, sequential
// promise chain, Promise.all, two worker threads) over a small cached file, a
// big cached file and many small files evicted from the page cache.
// This module is also the worker script for the worker_threads variants.

import path from 'node:path'
import { once } from 'node:events'
import { spawnSync } from 'node:child_process'
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads'
import {
  fs, fsp, fairfs, interleave, medians, msSince, makeTmpDir, removeTmpDir, writeFilled, fmtNum, fmtRatio,
} from './common.mjs'

export const name = 'sync-vs-async'
export const title = 'sync vs async: total ms to read a file set (readFileSync / promise chain / Promise.all / worker_threads)'

/** Reads every path in `paths` with `mode`; resolves the total bytes read. */
async function readAll(lib, mode, paths) {
  const readAsync = lib === 'fairfs' ? fairfs.readFile : fsp.readFile
  let bytes = 0
  if (mode === 'sync') {
    for (const p of paths) bytes += fs.readFileSync(p).length
  } else if (mode === 'chain') {
    for (const p of paths) bytes += (await readAsync(p)).length
  } else {
    for (const data of await Promise.all(paths.map((p) => readAsync(p)))) bytes += data.length
  }
  return bytes
}

if (!isMainThread && workerData?.bench === name) {
  parentPort.once('message', async () => parentPort.postMessage(await readAll(workerData.lib, workerData.mode, workerData.paths)))
  parentPort.postMessage('ready')
}

/** Splits `paths` over two workers; times from 'go' to both done, so worker start-up is not counted. */
async function readAllInWorkers(lib, mode, paths) {
  const half = paths.length >> 1
  const workers = [paths.slice(0, half), paths.slice(half)].map(
    (part) => new Worker(new URL(import.meta.url), { workerData: { bench: name, lib, mode, paths: part } }),
  )
  try {
    await Promise.all(workers.map((w) => once(w, 'message')))
    const t0 = process.hrtime.bigint()
    const finished = Promise.all(workers.map((w) => once(w, 'message')))
    for (const w of workers) w.postMessage('go')
    const bytes = (await finished).reduce((sum, [b]) => sum + b, 0)
    return { ms: msSince(t0), bytes }
  } finally {
    await Promise.all(workers.map((w) => w.terminate()))
  }
}

const VARIANTS = [
  { id: 'readFileSync loop', mode: 'sync', libs: ['node'] },
  { id: 'sequential promise chain', mode: 'chain', libs: ['node', 'fairfs'] },
  { id: 'Promise.all', mode: 'all', libs: ['node', 'fairfs'] },
  { id: '2 workers × readFileSync loop', mode: 'sync', libs: ['node'], workers: true },
  { id: '2 workers × Promise.all', mode: 'all', libs: ['node', 'fairfs'], workers: true },
]

/** posix_fadvise(DONTNEED) on every file in `dir` via dd, one shell for all files. */
function evict(dir) {
  const r = spawnSync('sh', ['-c', 'for f in "$0"/*; do dd if="$f" iflag=nocache count=0 status=none || exit 1; done', dir])
  if (r.status !== 0) throw new Error(`page cache eviction failed: ${r.stderr}`)
}

/** Resident pages of `file` per fincore(1), or null when fincore is unavailable. */
function residentPages(file) {
  const r = spawnSync('fincore', ['--bytes', '--noheadings', '--output', 'PAGES', file], { encoding: 'utf8' })
  return r.status === 0 ? Number(r.stdout.trim()) : null
}

export async function run({ quick, progress }) {
  const rounds = quick ? 2 : 3
  const smallReads = quick ? 1000 : 10000
  const bigReads = quick ? 10 : 100
  const distinctFiles = quick ? 100 : 1000
  const dir = makeTmpDir(name)
  const rows = []
  const ratios = []
  const raw = []
  let evictionNote = ''
  try {
    const small = path.join(dir, 'small.txt')
    const big = path.join(dir, 'big.txt')
    const coldDir = path.join(dir, 'cold')
    writeFilled(small, 3300, 's')
    writeFilled(big, 6_500_000, 'b')
    fs.mkdirSync(coldDir)
    const cold = Array.from({ length: distinctFiles }, (_, i) => path.join(coldDir, `${i}.txt`))
    for (const f of cold) writeFilled(f, 3300, 'c')
    // fadvise(DONTNEED) skips dirty pages, so the new files must reach the disk first.
    spawnSync('sync')
    evict(coldDir)
    const pages = residentPages(cold[0])
    evictionNote = pages === null
      ? 'Eviction could not be verified (fincore not found).'
      : `Eviction checked with fincore: ${pages} resident page(s) after eviction (0 = evicted).`

    const sets = [
      { id: `one 3.3 KB file × ${smallReads.toLocaleString('en-US')}`, short: '3.3 KB file', paths: Array(smallReads).fill(small), bytes: 3300 * smallReads },
      { id: `one 6.5 MB file × ${bigReads}`, short: '6.5 MB file', paths: Array(bigReads).fill(big), bytes: 6_500_000 * bigReads },
      { id: `${distinctFiles.toLocaleString('en-US')} distinct 3.3 KB files, evicted`, short: 'evicted files', paths: cold, bytes: 3300 * distinctFiles, evict: true },
    ]
    const sides = VARIANTS.flatMap((v) => v.libs.map((lib) => `${lib}: ${v.id}`))
    for (const set of sets) {
      const samples = await interleave(sides, rounds, async (side) => {
        const [lib, id] = side.split(': ')
        const v = VARIANTS.find((x) => x.id === id)
        if (set.evict) evict(coldDir)
        let ms, bytes
        if (v.workers) ({ ms, bytes } = await readAllInWorkers(lib, v.mode, set.paths))
        else {
          const t0 = process.hrtime.bigint()
          bytes = await readAll(lib, v.mode, set.paths)
          ms = msSince(t0)
        }
        if (bytes !== set.bytes) throw new Error(`${side}: read ${bytes} bytes, expected ${set.bytes}`)
        return ms
      }, (p) => progress(`${set.id} ${p}`))
      const m = medians(samples)
      raw.push({ set: set.id, samples })
      const nodeSync = m['node: readFileSync loop']
      for (const v of VARIANTS) {
        const nodeMs = m[`node: ${v.id}`]
        const fairfsMs = m[`fairfs: ${v.id}`]
        const has = fairfsMs !== undefined
        rows.push([
          set.id, v.id, fmtNum(nodeMs), has ? fmtNum(fairfsMs) : 'n/a',
          has ? fmtRatio(nodeMs / fairfsMs) : '—', has ? fmtRatio(nodeSync / fairfsMs) : '—',
        ])
        if (has) ratios.push({ label: `${set.short}, ${v.id}: node ÷ fairfs ms`, value: nodeMs / fairfsMs })
      }
    }
  } finally {
    removeTmpDir(dir)
  }
  return {
    notes: [
      `${rounds} interleaved rounds; medians of the total time per variant. node async variants use fs.promises.readFile, fairfs ones fairfs.readFile (promise).`,
      `Evicted set: ${distinctFiles} files written, synced, then dropped from the page cache before every measurement with \`dd if=FILE iflag=nocache count=0\` (posix_fadvise DONTNEED; not timed). ${evictionNote}`,
      'Worker variants split the reads over 2 worker_threads; timing starts when both are ready. fairfs has no sync API, hence n/a.',
    ],
    tables: [{
      caption: 'total ms (median); ratios = node ms ÷ fairfs ms (> 1 = fairfs faster)',
      columns: ['file set', 'variant', 'node:fs ms', 'fairfs ms', 'node ÷ fairfs', 'node sync loop ÷ fairfs'],
      rows,
    }],
    ratios,
    raw,
  }
}
