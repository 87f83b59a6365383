// slow-storage: a FUSE mount whose every request takes 5 ms stands in for NFS, SMB or a
// FUSE bucket (fixtures/slowfs.py, which scripts/install-test-deps.sh sets up; the
// kernel keeps names and attributes 30 s, as an NFS client does, and reads bypass the
// page cache). Each side is a fresh process on a fresh mount (the client's caches
// empty): 256 stats and 256 4 KiB reads of different files at c=64 (over 64
// directories: the daemon looks names up one at a time per directory), one 8 MiB read,
// and a local 1 KiB read + stat every 5 ms beside four readers of the mount's big files.
// Sides: node:fs, node:fs with UV_THREADPOOL_SIZE=64, and fairfs/register. Needs root
// and FUSE; elsewhere it says why and measures nothing.

import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { KiB, MiB, interleave, median, makeTmpDir, removeTmpDir, writeFilled, fmtNum, ratioTable } from './common.mjs'
import { fuseUnavailable, mountSlowfs, unmountAll } from '../../__test__/fixtures/slowfs.mjs'

export const name = 'slow-storage'
export const title = 'slow-storage: a FUSE mount with 5 ms per request, node:fs vs UV_THREADPOOL_SIZE=64 vs fairfs'

const here = path.dirname(fileURLToPath(import.meta.url))
const probe = path.join(here, 'slow-storage', 'probe.mjs')
const SIDES = ['node:fs', 'node:fs UV64', 'fairfs']
const DELAY = 5
const CASES = [
  ['stats64', '256 stats, c=64, stats/s', true],
  ['reads64', '256 4 KiB reads, c=64, reads/s', true],
  ['bigMBps', 'one 8 MiB read, MB/s', true],
  ['localP50ms', 'local 1 KiB read + stat beside four slow readers: p50 ms', false],
  ['localP99ms', 'the same: p99 ms', false],
]

function runProbe(side, mountpoint, local, quick) {
  const execArgv = side === 'fairfs' ? ['--import', 'fairfs/register'] : []
  const env = { ...process.env }
  if (side === 'node:fs UV64') env.UV_THREADPOOL_SIZE = '64'
  const repo = path.join(here, '..', '..')
  return new Promise((resolve, reject) => execFile(process.execPath, [...execArgv, probe, mountpoint, local, quick ? '1' : '0'], { env, cwd: repo, maxBuffer: 1 << 20 },
    (err, stdout, stderr) => (err ? reject(new Error(`${side}: ${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout.trim().split('\n').pop())))))
}

export async function run({ quick, progress }) {
  const unavailable = fuseUnavailable()
  if (unavailable) return { notes: [`Not measured: ${unavailable}.`], tables: [], ratios: [], raw: null }
  const rounds = quick ? 1 : 3
  const source = makeTmpDir(`${name}-source`)
  const local = makeTmpDir(`${name}-local`)
  let samples
  try {
    progress('writing files')
    for (let d = 0; d < 64; d++) {
      fs.mkdirSync(path.join(source, `d${d}`))
      for (let f = 0; f < 4; f++) writeFilled(path.join(source, `d${d}`, `f${f}`), 4 * KiB, 'f')
    }
    for (let i = 0; i < 4; i++) writeFilled(path.join(source, `big${i}`), 8 * MiB, 'b')
    writeFilled(path.join(local, 'small'), KiB, 's')
    const delays = Object.fromEntries(['getattr', 'open', 'read', 'flush', 'release', 'readdir', 'readlink'].map((op) => [op, DELAY]))
    samples = await interleave(SIDES, rounds, async (side) => {
      // A fresh mount per measurement: the kernel's caches of it start empty.
      const fuse = await mountSlowfs({ source, options: { attrTimeout: 30, entryTimeout: 30, directIo: true, delays } })
      try {
        return await runProbe(side, fuse.mountpoint, local, quick)
      } finally {
        await fuse.unmount()
      }
    }, progress)
  } finally {
    await unmountAll()
    removeTmpDir(source)
    removeTmpDir(local)
  }
  const med = (side, key) => median(samples[side].map((s) => s[key]))
  const cell = (side, key) => {
    const xs = samples[side].map((s) => s[key])
    return `${fmtNum(median(xs))} (${fmtNum(Math.min(...xs))}–${fmtNum(Math.max(...xs))})`
  }
  const ratios = []
  for (const [key, label, higher] of CASES.filter(([k]) => k !== 'localP50ms')) {
    const best = higher ? Math.max(med('node:fs', key), med('node:fs UV64', key)) : Math.min(med('node:fs', key), med('node:fs UV64', key))
    ratios.push({ label: `${label}: fairfs vs node:fs's best of 4 and 64 threads (> 1 favours fairfs)`, value: higher ? med('fairfs', key) / best : best / med('fairfs', key) })
  }
  return {
    notes: [
      `FUSE passthrough (fixtures/slowfs.py), ${DELAY} ms per request (getattr, open, read, flush, release, readdir), attributes and names kept 30 s, reads direct (no page cache). A fresh mount and a fresh process per measurement; ${rounds} interleaved rounds; median (min–max).`,
      'fairfs gives the mount a lane of its own (src/lanes.rs) that grows while its requests wait, up to 64 workers.',
    ],
    tables: [{
      caption: 'per side: median (min–max)',
      columns: ['case', ...SIDES],
      rows: CASES.map(([key, label]) => [label, ...SIDES.map((s) => cell(s, key))]),
    }, ratioTable(ratios)],
    ratios,
    raw: samples,
  }
}
