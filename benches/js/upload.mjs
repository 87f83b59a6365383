// upload: an upload endpoint next to a login endpoint. express 5 + multer 2's disk
// storage takes 64 KiB uploads over 4 keep-alive connections while the same process
// keeps 4 crypto.pbkdf2 hashes in flight on libuv's pool. multer writes each file with
// node:fs's WriteStream (fs.open, fs.write/writev, fs.close through the module), which
// fairfs/register points at fairfs's pool. Sides: node:fs, node:fs with
// UV_THREADPOOL_SIZE=64 (the usual advice) and fairfs/register, busy and idle.

import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { launchServer, generator } from './server.mjs'
import { interleave, median, makeTmpDir, removeTmpDir, fmtNum, ratioTable } from './common.mjs'

export const name = 'upload'
export const title = 'upload: express + multer 64 KiB uploads while 4 pbkdf2 hashes fill libuv\'s pool'

const here = path.dirname(fileURLToPath(import.meta.url))
const HASHES = 4
const CONNECTIONS = 4
const LIBS = ['node:fs', 'node:fs UV64', 'fairfs']
/**
 * multer's own file names (crypto.randomBytes on libuv's pool), and names that need no
 * pool ("uuid"); "no-fs memory": multer's memory storage, no file system at all, the
 * most any file system could give this endpoint beside the hashes. "fairfs UV64": fairfs
 * with libuv's pool at 64 threads too, for the crypto fairfs leaves on it.
 */
const SIDES = [...LIBS, 'fairfs UV64', ...LIBS.map((lib) => `${lib} uuid`), 'fairfs uuid behind', 'no-fs memory', 'node:fs idle', 'fairfs idle']

function startServer(side, dir) {
  const [lib, ...variants] = side.split(' ')
  const execArgv = ['--import', path.join(here, 'server', 'hashes.mjs')]
  if (lib === 'fairfs') execArgv.push('--import', 'fairfs/register')
  const env = { ...process.env, FAIRFS_BENCH_HASHES: variants.includes('idle') ? '0' : String(HASHES) }
  if (variants.includes('UV64')) env.UV_THREADPOOL_SIZE = '64'
  if (variants.includes('uuid')) env.FAIRFS_BENCH_NAMES = 'uuid'
  if (variants.includes('memory')) env.FAIRFS_BENCH_STORAGE = 'memory'
  if (variants.includes('behind')) env.FAIRFS_BENCH_WRITE_BEHIND = '1'
  return launchServer('upload', dir, { execArgv, env })
}

function hashesDone(child) {
  return new Promise((resolve) => {
    child.once('message', (m) => resolve(m.hashes))
    child.send('hashes')
  })
}

export async function run({ quick, progress }) {
  const durationMs = quick ? 2000 : 4000
  const rounds = quick ? 1 : 3
  const root = makeTmpDir(name)
  let samples
  try {
    samples = await interleave(SIDES, rounds, async (side) => {
      // A directory per measurement, removed after it: the uploads are kept meanwhile,
      // as an endpoint keeps them.
      const dir = fs.mkdtempSync(path.join(root, 'uploads-'))
      const { child, port } = await startServer(side, dir)
      try {
        const before = await hashesDone(child)
        const t0 = process.hrtime.bigint()
        const result = await generator('uploads.mjs', [port, CONNECTIONS, durationMs])
        const seconds = Number(process.hrtime.bigint() - t0) / 1e9
        const hashesPerSec = ((await hashesDone(child)) - before) / seconds
        if (result.errors > 0) throw new Error(`${side}: ${result.errors} uploads failed`)
        if (side.endsWith('memory')) return { ...result, hashesPerSec, files: 0 }
        // Every answered upload is on disk whole; requests the load generator cut off
        // when its time was up may have left a part (at most one per connection).
        const sizes = fs.readdirSync(dir).map((f) => fs.statSync(path.join(dir, f)).size)
        const whole = sizes.filter((s) => s === 64 * 1024).length
        if (whole < result.answered || sizes.length - whole > CONNECTIONS) {
          throw new Error(`${side}: ${result.answered} answered, ${whole} files whole, ${sizes.length - whole} not`)
        }
        return { ...result, hashesPerSec, files: sizes.length }
      } finally {
        child.kill()
        fs.rmSync(dir, { recursive: true, force: true })
      }
    }, progress)
  } finally {
    removeTmpDir(root)
  }
  const med = (side, key) => median(samples[side].map((s) => s[key]))
  const rows = SIDES.map((side) => [side, fmtNum(med(side, 'requests')), fmtNum(med(side, 'p50')), fmtNum(med(side, 'p99')),
    side.endsWith('idle') ? '—' : fmtNum(med(side, 'hashesPerSec'))])
  const ratios = [
    { label: 'uploads/s beside 4 pbkdf2: fairfs ÷ node:fs', value: med('fairfs', 'requests') / med('node:fs', 'requests') },
    { label: 'uploads/s beside 4 pbkdf2: fairfs ÷ node:fs UV_THREADPOOL_SIZE=64', value: med('fairfs', 'requests') / med('node:fs UV64', 'requests') },
    { label: 'the same, uuid names: fairfs ÷ node:fs', value: med('fairfs uuid', 'requests') / med('node:fs uuid', 'requests') },
    { label: 'the same, uuid names: fairfs ÷ node:fs UV_THREADPOOL_SIZE=64', value: med('fairfs uuid', 'requests') / med('node:fs UV64 uuid', 'requests') },
    { label: 'the same, uuid names, fairfs with configure({ writeBehind: true }) ÷ node:fs', value: med('fairfs uuid behind', 'requests') / med('node:fs uuid', 'requests') },
    { label: 'uploads/s beside 4 pbkdf2, both sides with UV_THREADPOOL_SIZE=64 (for multer\'s crypto.randomBytes): fairfs ÷ node:fs', value: med('fairfs UV64', 'requests') / med('node:fs UV64', 'requests') },
    { label: 'no file system at all (multer memory storage) beside 4 pbkdf2 ÷ node:fs: the most any fs could reach', value: med('no-fs memory', 'requests') / med('node:fs', 'requests') },
    { label: 'uploads/s idle: fairfs ÷ node:fs', value: med('fairfs idle', 'requests') / med('node:fs idle', 'requests') },
    { label: 'pbkdf2 hashes/s beside the uploads: fairfs ÷ node:fs', value: med('fairfs', 'hashesPerSec') / med('node:fs', 'hashesPerSec') },
  ]
  return {
    notes: [
      `Server: express 5 + multer 2 disk storage (benches/js/server/upload-server.mjs), one process per measurement, keeping ${HASHES} crypto.pbkdf2 hashes (sha512, 20,000 iterations) in flight, or none ("idle"). Every upload is checked to be on disk whole.`,
      '"no-fs memory" keeps each upload in memory (multer.memoryStorage()): no file system call at all, so its rate beside the hashes bounds what any file system can give this endpoint in this process on this machine.',
      '"behind": fairfs with configure({ writeBehind: true }) (a WriteStream\'s next chunk queued behind the write running).',
      'multer names each file with crypto.randomBytes(16, callback), one trip through libuv\'s pool per upload that fairfs does not take; "uuid" sides name it with crypto.randomUUID() (no pool) instead, to show the file system\'s part alone.',
      `Load: autocannon posting a 64 KiB file as multipart/form-data over ${CONNECTIONS} keep-alive connections for ${durationMs} ms, in a process of its own. ${rounds} interleaved rounds; medians.`,
    ],
    tables: [{
      caption: 'uploads/s, latency (ms) and the hashes the same process finished meanwhile',
      columns: ['server', 'uploads/s', 'p50', 'p99', 'hashes/s'],
      rows,
    }, ratioTable(ratios)],
    ratios,
    raw: samples,
  }
}
