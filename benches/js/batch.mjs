// batch: many small files at once (the nodejs/node#52046 case: 10,000 small
// promise reads). Promise.all opens every file at once, so the fd limit matters.

import path from 'node:path'
import { spawnSync } from 'node:child_process'
import {
  KiB, fs, fsp, fairfs, interleave, medians, msSince, makeTmpDir, removeTmpDir, writeFilled,
  fmtNum, fmtRatio, NOT_IMPLEMENTED,
} from './common.mjs'

export const name = 'batch'
export const title = 'batch: 10,000 small files read at once (quick: 2,000)'

/** The soft RLIMIT_NOFILE this process inherited (Node has no API for it). */
function openFileLimit() {
  const out = spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).stdout.trim()
  return out === 'unlimited' ? Infinity : Number(out) || 1024
}

/** Promise.all over `paths` in slices of at most `chunk`, so no more than `chunk` files are open at once. */
async function allInChunks(paths, chunk, read) {
  let bytes = 0
  for (let i = 0; i < paths.length; i += chunk) {
    for (const data of await Promise.all(paths.slice(i, i + chunk).map((p) => read(p)))) bytes += data.length
  }
  return bytes
}

export async function run({ quick, progress }) {
  const count = quick ? 2000 : 10000
  const rounds = quick ? 2 : 5
  const limit = openFileLimit()
  // Leave room for the fds Node itself holds (stdio, epoll, io_uring, pipes).
  const chunk = Math.min(count, Math.max(64, limit - 256))
  const hasReadFiles = typeof fairfs.readFiles === 'function'
  const read = {
    'node readFileSync loop': (paths) => {
      let bytes = 0
      for (const p of paths) bytes += fs.readFileSync(p).length
      return bytes
    },
    'node Promise.all(fs.promises.readFile)': (paths) => allInChunks(paths, chunk, fsp.readFile),
    'fairfs Promise.all(fairfs.readFile)': (paths) => allInChunks(paths, chunk, fairfs.readFile),
  }
  if (hasReadFiles) {
    read['fairfs.readFiles'] = async (paths) => (await fairfs.readFiles(paths)).reduce((sum, d) => sum + d.length, 0)
  }
  const dir = makeTmpDir(name)
  let m
  let samples
  try {
    progress(`writing ${count} files`)
    const paths = Array.from({ length: count }, (_, i) => path.join(dir, `${i}.txt`))
    for (const p of paths) writeFilled(p, KiB, 'f')
    samples = await interleave(Object.keys(read), rounds, async (side) => {
      const t0 = process.hrtime.bigint()
      const bytes = await read[side](paths)
      const ms = msSince(t0)
      if (bytes !== count * KiB) throw new Error(`${side}: read ${bytes} bytes, expected ${count * KiB}`)
      return ms
    }, progress)
    m = medians(samples)
  } finally {
    removeTmpDir(dir)
  }
  const nodeSync = m['node readFileSync loop']
  const nodeAll = m['node Promise.all(fs.promises.readFile)']
  const row = (method, ms) => [method, fmtNum(ms), fmtNum(count / (ms / 1000)),
    method.startsWith('fairfs') ? fmtRatio(nodeAll / ms) : '—', method.startsWith('fairfs') ? fmtRatio(nodeSync / ms) : '—']
  const rows = Object.keys(read).map((method) => row(method, m[method]))
  if (!hasReadFiles) rows.push(['fairfs.readFiles', NOT_IMPLEMENTED, '—', '—', '—'])
  const fairfsMethods = Object.keys(read).filter((k) => k.startsWith('fairfs'))
  return {
    notes: [
      `${count.toLocaleString('en-US')} files of 1 KiB, freshly written (in page cache); ${rounds} interleaved rounds, medians.`,
      chunk < count
        ? `ulimit -n is ${limit}: Promise.all runs in slices of ${chunk} files to avoid EMFILE (raise the limit to read all at once).`
        : `ulimit -n is ${limit}, enough for one Promise.all over all ${count.toLocaleString('en-US')} files (no chunking).`,
    ],
    tables: [{
      caption: 'total ms (median); ratios = node ms ÷ fairfs ms (> 1 = fairfs faster)',
      columns: ['method', 'ms', 'files/s', 'node Promise.all ÷ this', 'node sync loop ÷ this'],
      rows,
    }],
    ratios: fairfsMethods.map((k) => ({ label: `${k} vs node Promise.all (ms)`, value: nodeAll / m[k] })),
    raw: { count, chunk, samples },
  }
}
