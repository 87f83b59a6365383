// slow-storage: a FUSE mount whose every request takes 5 ms (then 1 ms) stands in for
// NFS, SMB or a FUSE bucket (fixtures/slowfs.py, which scripts/install-test-deps.sh sets
// up; the kernel keeps names and attributes 30 s, as an NFS client does, and reads
// bypass the page cache). Each side is a fresh process on a fresh mount (the client's
// caches empty): 256 stats and 256 4 KiB reads of different files at c=64 (over 64
// directories: the daemon looks names up one at a time per directory), one 8 MiB read,
// a local 1 KiB read + stat every 5 ms beside four readers of the mount's big files;
// then the daemon stops (SIGSTOP) while 16 reads wait on it: local work finished in a
// second, the event loop's largest gap, and how long process.exit() takes.
// Sides: node:fs, node:fs with UV_THREADPOOL_SIZE=64, and fairfs/register; --peers adds
// Bun and Deno (their node:fs). Needs root and FUSE; elsewhere it says why and measures
// nothing.

import fs from 'node:fs'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { KiB, MiB, interleave, median, makeTmpDir, removeTmpDir, writeFilled, fmtNum, ratioTable } from './common.mjs'
import { fuseUnavailable, mountSlowfs, unmountAll } from '../../__test__/fixtures/slowfs.mjs'
import { peerBinary } from './peers/fetch.mjs'

export const name = 'slow-storage'
export const title = 'slow-storage: a FUSE mount with 5 ms and 1 ms per request, node:fs vs UV_THREADPOOL_SIZE=64 vs fairfs'

const here = path.dirname(fileURLToPath(import.meta.url))
const probe = path.join(here, 'slow-storage', 'probe.mjs')
const SIDES = ['node:fs', 'node:fs UV64', 'fairfs']
/** With --peers: the same probe in Bun and Deno (their node:fs). */
const PEERS = ['Bun', 'Deno']
const DELAYS = [5, 1]
/** How long a side may take to exit while its reads wait on the stopped daemon. */
const EXIT_CAP_MS = 3000
// [key, label, higher is better]
const CASES = [
  ['stats64', '256 stats, c=64, stats/s', true],
  ['reads64', '256 4 KiB reads, c=64, reads/s', true],
  ['bigMBps', 'one 8 MiB read, MB/s', true],
  ['localP50ms', 'local 1 KiB read + stat beside four slow readers: p50 ms', false],
  ['localP99ms', 'the same: p99 ms', false],
  ['hungTriples', 'hung: local read + stat + 1 MiB read triples done in 1 s', true],
  ['hungGapMs', 'hung: largest event-loop gap, ms', false],
  ['exitMs', `hung: process.exit() took, ms (capped at ${EXIT_CAP_MS})`, false],
]

/**
 * One probe on `fuse`: its measurements, and how long its process.exit() took once it
 * asked for it with the daemon stopped under 16 reads (capped: node:fs never exits,
 * libuv joins its threads). The daemon goes on after that.
 */
function runProbe(side, fuse, local, quick) {
  const env = { ...process.env }
  if (side === 'node:fs UV64') env.UV_THREADPOOL_SIZE = '64'
  const repo = path.join(here, '..', '..')
  const args = [probe, fuse.mountpoint, local, quick ? '1' : '0', String(fuse.pid)]
  const [cmd, argv] = side === 'Bun' ? [peerBinary('bun'), args]
    : side === 'Deno' ? [peerBinary('deno'), ['run', '-A', ...args]]
      : [process.execPath, side === 'fairfs' ? ['--import', 'fairfs/register', ...args] : args]
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { env, cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    let exitAsked = 0
    let capTimer
    child.stderr.setEncoding('utf8').on('data', (s) => (stderr += s))
    child.stdout.setEncoding('utf8').on('data', (s) => {
      stdout += s
      if (!exitAsked && stdout.includes('exiting\n')) {
        exitAsked = performance.now()
        capTimer = setTimeout(() => { fuse.cont(); child.kill('SIGKILL') }, EXIT_CAP_MS)
      }
    })
    child.on('exit', (code, signal) => {
      const exitMs = exitAsked ? Math.min(performance.now() - exitAsked, EXIT_CAP_MS) : NaN
      clearTimeout(capTimer)
      fuse.cont()
      const line = stdout.split('\n').find((l) => l.startsWith('{'))
      if (!line || !exitAsked) return reject(new Error(`${side}: exited with ${code ?? signal}\n${stderr}`))
      resolve({ ...JSON.parse(line), exitMs })
    })
  })
}

export async function run({ quick, peers, progress }) {
  const unavailable = fuseUnavailable()
  if (unavailable) return { notes: [`Not measured: ${unavailable}.`], tables: [], ratios: [], raw: null }
  const rounds = quick ? 1 : 3
  const source = makeTmpDir(`${name}-source`)
  const local = makeTmpDir(`${name}-local`)
  const samples = {}
  const sides = peers ? [...SIDES, ...PEERS] : SIDES
  try {
    progress('writing files')
    for (let d = 0; d < 64; d++) {
      fs.mkdirSync(path.join(source, `d${d}`))
      for (let f = 0; f < 4; f++) writeFilled(path.join(source, `d${d}`, `f${f}`), 4 * KiB, 'f')
    }
    for (let i = 0; i < 4; i++) writeFilled(path.join(source, `big${i}`), 8 * MiB, 'b')
    writeFilled(path.join(local, 'small'), KiB, 's')
    writeFilled(path.join(local, 'mid'), MiB, 'm')
    for (const delay of DELAYS) {
      const delays = Object.fromEntries(['getattr', 'open', 'read', 'flush', 'release', 'readdir', 'readlink'].map((op) => [op, delay]))
      samples[delay] = await interleave(sides, rounds, async (side) => {
        // A fresh mount per measurement: the kernel's caches of it start empty.
        const fuse = await mountSlowfs({ source, options: { attrTimeout: 30, entryTimeout: 30, directIo: true, delays } })
        try {
          return await runProbe(side, fuse, local, quick)
        } finally {
          fuse.cont()
          await fuse.unmount()
        }
      }, (p) => progress(`${delay} ms: ${p}`))
    }
  } finally {
    await unmountAll()
    removeTmpDir(source)
    removeTmpDir(local)
  }
  const tables = []
  const ratios = []
  for (const delay of DELAYS) {
    const med = (side, key) => median(samples[delay][side].map((s) => s[key]))
    const cell = (side, key) => {
      const xs = samples[delay][side].map((s) => s[key])
      return `${fmtNum(median(xs))} (${fmtNum(Math.min(...xs))}–${fmtNum(Math.max(...xs))})`
    }
    tables.push({
      caption: `${delay} ms per request: median (min–max) per side`,
      columns: ['case', ...sides],
      rows: CASES.map(([key, label]) => [label, ...sides.map((s) => cell(s, key))]),
    })
    for (const [key, label, higher] of CASES.filter(([k]) => !['localP50ms', 'hungGapMs', 'exitMs'].includes(k))) {
      const best = higher ? Math.max(med('node:fs', key), med('node:fs UV64', key)) : Math.min(med('node:fs', key), med('node:fs UV64', key))
      const value = higher ? med('fairfs', key) / best : best / med('fairfs', key)
      ratios.push({ label: `${delay} ms, ${label}: fairfs vs node:fs's best of 4 and 64 threads (> 1 favours fairfs)`, value })
      if (peers) {
        const deno = med('Deno', key)
        ratios.push({ label: `${delay} ms, ${label}: fairfs vs Deno (> 1 favours fairfs)`, value: higher ? med('fairfs', key) / deno : deno / med('fairfs', key) })
      }
    }
  }
  return {
    notes: [
      `FUSE passthrough (fixtures/slowfs.py), ${DELAYS.join(' ms, then ')} ms per request (getattr, open, read, flush, release, readdir), attributes and names kept 30 s, reads direct (no page cache). A fresh mount and a fresh process per measurement; ${rounds} interleaved rounds; median (min–max).`,
      'fairfs gives the mount a lane of its own (src/lanes.rs) that grows while its requests wait, up to 64 workers.',
      'The daemon runs on this machine: its CPU is the client\'s, and the local p99 includes V8\'s collections of the slow readers\' own results (8 MiB Buffers at the rate each side reads them).',
      `"hung": the daemon is stopped while 16 reads of the mount wait; a triple (local 1 KiB read, stat, 1 MiB read) counts if done within 250 ms. process.exit() is then called with the reads still waiting; ${EXIT_CAP_MS} ms means it had not returned (the side is killed).`,
    ],
    tables: [...tables, ratioTable(ratios)],
    ratios,
    raw: samples,
  }
}
