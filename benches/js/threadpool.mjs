// threadpool: six crypto.pbkdf2 calls (libuv threadpool work) started while big
// reads are in flight. node:fs reads take libuv threads from pbkdf2; fairfs
// reads run on their own pool and compete only for CPU. UV_THREADPOOL_SIZE is
// read once at start-up, so each pool size runs in a child process that
// executes this module with --child.

import path from 'node:path'
import crypto from 'node:crypto'
import { spawn } from 'node:child_process'
import { fileURLToPath, pathToFileURL } from 'node:url'
import {
  MiB, readers, checkLength, interleave, medians, loops, msSince, sleep,
  makeTmpDir, removeTmpDir, writeFilled, fmtSize, fmtNum, fmtRatio,
} from './common.mjs'

export const name = 'threadpool'
export const title = 'threadpool contention: six crypto.pbkdf2 calls while big reads are in flight'

const SIDES = ['no reads', 'node-cb', 'node-promises', 'fairfs-cb']
const PBKDF2_CALLS = 6
const READ_LOOPS = 4
const POOL_SIZES = [4, 6]

function pbkdf2(iterations) {
  return new Promise((resolve, reject) =>
    crypto.pbkdf2('password', 'salt', iterations, 64, 'sha512', (err, key) =>
      err ? reject(err) : key.length === 64 ? resolve() : reject(new Error('short pbkdf2 key'))))
}

/** ms until all six pbkdf2 calls are done, with `side`'s read loops running meanwhile. */
async function measure(side, { file, size, iterations }) {
  let on = true
  const load = side === 'no reads' ? null : loops(READ_LOOPS, readers[side](file, null, (d) => checkLength(d, size)), () => on)
  if (load) await sleep(30) // reads are past open/fstat and streaming chunks
  const t0 = process.hrtime.bigint()
  await Promise.all(Array.from({ length: PBKDF2_CALLS }, () => pbkdf2(iterations)))
  const ms = msSince(t0)
  on = false
  await load
  return ms
}

/** Child: all rounds for one UV_THREADPOOL_SIZE; progress lines on stderr, samples as JSON on stdout. */
async function child(opts) {
  const samples = await interleave(SIDES, opts.rounds, (side) => measure(side, opts), (p) => process.stderr.write(`${p}\n`))
  process.stdout.write(JSON.stringify(samples))
}

function runChild(poolSize, opts, progress) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [fileURLToPath(import.meta.url), '--child', JSON.stringify(opts)], {
      env: { ...process.env, UV_THREADPOOL_SIZE: String(poolSize) },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    proc.stdout.setEncoding('utf8').on('data', (d) => { stdout += d })
    proc.stderr.setEncoding('utf8').on('data', (d) => {
      stderr += d
      const lines = stderr.trimEnd().split('\n')
      progress(`UV_THREADPOOL_SIZE=${poolSize} ${lines[lines.length - 1]}`)
    })
    proc.on('error', reject)
    proc.on('close', (code) => (code === 0 ? resolve(JSON.parse(stdout)) : reject(new Error(`child exited ${code}: ${stderr.slice(-2000)}`))))
  })
}

export async function run({ quick, progress }) {
  const size = quick ? 16 * MiB : 64 * MiB
  const iterations = quick ? 25_000 : 100_000
  const rounds = quick ? 2 : 5
  const dir = makeTmpDir(name)
  const rows = []
  const ratios = []
  const raw = []
  try {
    const file = path.join(dir, 'big.bin')
    writeFilled(file, size, 'r')
    for (const poolSize of POOL_SIZES) {
      const samples = await runChild(poolSize, { file, size, iterations, rounds }, progress)
      const m = medians(samples)
      raw.push({ uvThreadpoolSize: poolSize, samples })
      rows.push([
        String(poolSize), ...SIDES.map((s) => fmtNum(m[s])),
        fmtRatio(m['node-cb'] / m['no reads']), fmtRatio(m['fairfs-cb'] / m['no reads']),
        fmtRatio(m['node-cb'] / m['fairfs-cb']), fmtRatio(m['node-promises'] / m['fairfs-cb']),
      ])
      ratios.push({ label: `UV_THREADPOOL_SIZE=${poolSize}: pbkdf2 ms, node cb ÷ fairfs reads`, value: m['node-cb'] / m['fairfs-cb'] })
    }
  } finally {
    removeTmpDir(dir)
  }
  return {
    notes: [
      `${PBKDF2_CALLS} × pbkdf2(sha512, ${iterations.toLocaleString('en-US')} iterations) started together, 30 ms after ${READ_LOOPS} readFile loops over a ${fmtSize(size)} file began; figure = ms until all ${PBKDF2_CALLS} are done.`,
      `One child process per UV_THREADPOOL_SIZE (${POOL_SIZES.join(', ')}; 4 is libuv's default), ${rounds} interleaved rounds in each. fairfs keeps its default pool.`,
    ],
    tables: [{
      caption: 'ms until all six pbkdf2 calls finish (median); "÷ no reads" = slowdown, last two > 1 = fairfs reads hurt pbkdf2 less',
      columns: ['UV_THREADPOOL_SIZE', 'no reads', '+ node cb reads', '+ node promises reads', '+ fairfs reads',
        'node cb ÷ no reads', 'fairfs ÷ no reads', 'node cb ÷ fairfs', 'node promises ÷ fairfs'],
      rows,
    }],
    ratios,
    raw,
  }
}

if (process.argv[2] === '--child' && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await child(JSON.parse(process.argv[3]))
}
