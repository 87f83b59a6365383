// request-path: a static file server whose libuv pool is busy. The server process keeps
// four crypto.pbkdf2 hashes in flight (a login endpoint under load, on libuv's four
// threads) while autocannon asks it for 100 different 1 KiB files. Each request makes
// the server stat the file (send, @fastify/send) before it reads it, and on node:fs
// both queue behind the hashes. Sides: node:fs, node:fs with UV_THREADPOOL_SIZE=64 (the
// usual advice), and fairfs/register; plain http (examples/static-server.mjs), express
// with serve-static, fastify with @fastify/static and koa with koa-static. Also the idle
// servers, for what the hashes cost.

import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { launchServer, generator } from './server.mjs'
import { KiB, interleave, median, makeTmpDir, removeTmpDir, writeFilled, fmtNum, ratioTable } from './common.mjs'

export const name = 'request-path'
export const title = 'request-path: 1 KiB requests while 4 pbkdf2 hashes fill libuv\'s pool'

const here = path.dirname(fileURLToPath(import.meta.url))
const HASHES = 4
const CONNECTIONS = 4
const LIBS = ['node:fs', 'node:fs UV64', 'fairfs']
const KINDS = ['http', 'express', 'fastify', 'koa']
/** A server with the hashes and no requests: the hashes' own rate. */
const HASHES_ALONE = 'http node:fs alone'
const SIDES = [...KINDS.flatMap((kind) => [...LIBS.map((lib) => `${kind} ${lib}`), `${kind} node:fs idle`, `${kind} fairfs idle`]), HASHES_ALONE]

function startServer(side, dir) {
  const [kind, lib, variant] = side.split(' ')
  const execArgv = ['--import', path.join(here, 'server', 'hashes.mjs')]
  if (lib === 'fairfs') execArgv.push('--import', 'fairfs/register')
  const env = { ...process.env, FAIRFS_BENCH_HASHES: variant === 'idle' ? '0' : String(HASHES) }
  if (variant === 'UV64') env.UV_THREADPOOL_SIZE = '64'
  return launchServer(kind, dir, { execArgv, env })
}

/** The server's hashes finished so far, its event loop's utilization and its main thread's schedstat. */
function serverState(child) {
  return new Promise((resolve) => {
    child.once('message', resolve)
    child.send('hashes')
  })
}

/**
 * What the server's main thread did between two of its states, as shares of the
 * time: its event loop busy (not waiting in epoll), on a CPU, and runnable but waiting
 * for one. A loop that is busy all the time waits for nothing but a CPU.
 */
function mainThread(before, after) {
  const loop = performance.eventLoopUtilization(after.loop, before.loop).utilization
  if (!before.sched || !after.sched) return { loop, onCpu: NaN, runnable: NaN }
  const wall = (after.loop.idle + after.loop.active - before.loop.idle - before.loop.active) * 1e6
  return {
    loop,
    onCpu: (after.sched.onCpu - before.sched.onCpu) / wall,
    runnable: (after.sched.waiting - before.sched.waiting) / wall,
  }
}

export async function run({ quick, progress }) {
  const durationMs = quick ? 2000 : 4000
  const rounds = quick ? 1 : 3
  const dir = makeTmpDir(name)
  let samples
  try {
    for (let i = 0; i < 100; i++) writeFilled(path.join(dir, `small-${i}.txt`), KiB, 's')
    samples = await interleave(SIDES, rounds, async (side) => {
      const { child, port } = await startServer(side, dir)
      try {
        const before = await serverState(child)
        const t0 = process.hrtime.bigint()
        const result = side === HASHES_ALONE
          ? await new Promise((resolve) => setTimeout(resolve, durationMs, { requests: 0, p50: NaN, p99: NaN, errors: 0 }))
          : await generator('smalls.mjs', [port, CONNECTIONS, durationMs])
        const seconds = Number(process.hrtime.bigint() - t0) / 1e9
        const after = await serverState(child)
        const hashesPerSec = (after.hashes - before.hashes) / seconds
        if (result.errors > 0) throw new Error(`${side}: ${result.errors} requests failed`)
        return { ...result, hashesPerSec, ...mainThread(before, after) }
      } finally {
        child.kill()
      }
    }, progress)
  } finally {
    removeTmpDir(dir)
  }
  const med = (side, key) => median(samples[side].map((s) => s[key]))
  const pct = (side, key) => (Number.isNaN(med(side, key)) ? '—' : `${Math.round(med(side, key) * 100)}%`)
  const rows = SIDES.map((side) => [side, side === HASHES_ALONE ? '—' : fmtNum(med(side, 'requests')),
    side === HASHES_ALONE ? '—' : fmtNum(med(side, 'p50')), side === HASHES_ALONE ? '—' : fmtNum(med(side, 'p99')),
    side.endsWith('idle') ? '—' : fmtNum(med(side, 'hashesPerSec')),
    pct(side, 'loop'), pct(side, 'onCpu'), pct(side, 'runnable')])
  const ratios = []
  for (const kind of KINDS) {
    const ours = `${kind} fairfs`
    ratios.push(
      { label: `${kind}, 4 pbkdf2: req/s, fairfs ÷ node:fs`, value: med(ours, 'requests') / med(`${kind} node:fs`, 'requests') },
      { label: `${kind}, 4 pbkdf2: req/s, fairfs ÷ node:fs UV_THREADPOOL_SIZE=64`, value: med(ours, 'requests') / med(`${kind} node:fs UV64`, 'requests') },
      { label: `${kind}, 4 pbkdf2: hashes/s, fairfs ÷ node:fs`, value: med(ours, 'hashesPerSec') / med(`${kind} node:fs`, 'hashesPerSec') },
      { label: `${kind}, 4 pbkdf2: hashes/s, fairfs ÷ hashes alone`, value: med(ours, 'hashesPerSec') / med(HASHES_ALONE, 'hashesPerSec') },
      { label: `${kind}, idle: req/s, fairfs ÷ node:fs`, value: med(`${kind} fairfs idle`, 'requests') / med(`${kind} node:fs idle`, 'requests') },
    )
  }
  return {
    notes: [
      `Server: one process per measurement; plain http is examples/static-server.mjs (fs.stat, then readFile below 1 MiB); express 5 with serve-static, fastify 5 with @fastify/static and koa 3 with koa-static each fs.stat, then stream the file. Each server process keeps ${HASHES} crypto.pbkdf2 hashes (sha512, 20,000 iterations) in flight, or none ("idle").`,
      `Load: autocannon with ${CONNECTIONS} keep-alive connections over 100 different 1 KiB files for ${durationMs} ms, in a process of its own.`,
      `"UV64" is node:fs with UV_THREADPOOL_SIZE=64; "alone" is a server with the hashes and no requests, for the hashes' own rate. ${rounds} interleaved rounds; medians.`,
      'The server\'s main thread, as shares of the time measured: "loop" its event loop busy (not waiting for I/O or a pool), "CPU" running, "runnable" ready but waiting for a CPU (Linux schedstat). A loop busy nearly all the time waits on nothing but the CPU, which the hashes and the load generator share with it.',
    ],
    tables: [{
      caption: 'requests (ms latencies), the hashes the same process finished meanwhile, and its main thread',
      columns: ['server', 'req/s', 'p50', 'p99', 'hashes/s', 'loop', 'CPU', 'runnable'],
      rows,
    }, ratioTable(ratios)],
    ratios,
    raw: samples,
  }
}
