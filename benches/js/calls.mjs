// calls: the cost of one small cached call. Each call at c=1 and c=64 in node:fs,
// node:fs with UV_THREADPOOL_SIZE=64, fairfs (install()), Bun and Deno, each runtime in
// a fresh process of its own (benches/js/peers/calls-probe.mjs), rounds interleaved;
// with the JS thread's CPU per call and the synchronous call's cost as the floor.
// Bun and Deno come from the npm registry the first time (benches/js/peers/fetch.mjs);
// where they cannot run, their columns are left out and a note says why.

import fs from 'node:fs'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { interleave, makeTmpDir, removeTmpDir, median, fmtNum, fmtRatio, KiB } from './common.mjs'
import { peerBinary } from './peers/fetch.mjs'

export const name = 'calls'
export const title = 'calls: small cached calls, one at a time and 64 in flight'

const callsProbe = path.join(path.dirname(fileURLToPath(import.meta.url)), 'peers', 'calls-probe.mjs')

/** The probe's cases, in its order, with what each is. */
const CALLS = [
  ['statHit', '`fs.promises.stat`, file there'],
  ['statMiss', '`fs.promises.stat`, no such file'],
  ['statCallback', '`fs.stat` (callback)'],
  ['access', '`fs.promises.access`'],
  ['readFile1K', '1 KiB `fs.promises.readFile`'],
  ['readdir100', '`fs.promises.readdir`, 100 entries'],
  ['openClose', '`fs.open` + `fs.close` (callbacks)'],
  ['write16', '16-byte `fs.write` to a log fd (callback)'],
  ['writeFile1K', '1 KiB `fs.promises.writeFile`'],
]

/** Runs one side's probe process over `dir`; resolves the JSON of its last line. */
function runCallsProbe([cmd, runtimeArgs, env, api], dir, quick) {
  return new Promise((resolve, reject) => {
    const options = { maxBuffer: 1 << 20, env: { ...process.env, ...env } }
    execFile(cmd, [...runtimeArgs, callsProbe, api, dir, quick ? '1' : '0'], options, (err, stdout, stderr) => {
      if (err) return reject(new Error(`${cmd} ${api}: ${err.message}\n${stderr}`))
      resolve(JSON.parse(stdout.trim().split('\n').pop()))
    })
  })
}

export async function run({ quick, progress }) {
  const rounds = quick ? 1 : 3
  const uv4 = { UV_THREADPOOL_SIZE: '4' }
  // [command, runtime arguments, environment, the probe's api argument]
  const sides = {
    'node:fs': [process.execPath, [], uv4, 'node'],
    'node:fs UV=64': [process.execPath, [], { UV_THREADPOOL_SIZE: '64' }, 'node'],
    fairfs: [process.execPath, [], uv4, 'fairfs'],
  }
  const notes = []
  for (const peer of ['bun', 'deno']) {
    try {
      progress(`fetching ${peer}`)
      const bin = peerBinary(peer)
      const label = `${peer === 'bun' ? 'Bun' : 'Deno'} ${await version(bin)}`
      sides[label] = peer === 'bun' ? [bin, [], {}, 'bun'] : [bin, ['run', '-A'], {}, 'deno']
    } catch (err) {
      notes.push(`${peer} left out: ${err.message.split('\n')[0]}`)
    }
  }
  const dir = makeTmpDir('calls')
  let samples
  try {
    fs.writeFileSync(path.join(dir, 'file'), Buffer.alloc(KiB, 'f'))
    fs.mkdirSync(path.join(dir, 'dir'))
    for (let i = 0; i < 100; i++) fs.writeFileSync(path.join(dir, 'dir', `entry-${i}`), '')
    samples = await interleave(Object.keys(sides), rounds, (side) => runCallsProbe(sides[side], dir, quick), progress)
  } finally {
    removeTmpDir(dir)
  }
  return report(samples, rounds, notes)
}

const med = (samples, side, key) => {
  const xs = samples[side].map((s) => s[key]).filter(Number.isFinite)
  return xs.length ? median(xs) : NaN
}
function cell(samples, side, key, digits = 0) {
  const xs = samples[side].map((s) => s[key]).filter(Number.isFinite)
  if (!xs.length) return '—'
  const f = (x) => (digits ? x.toFixed(digits) : fmtNum(x))
  return xs.length > 1 ? `${f(median(xs))} (${f(Math.min(...xs))}–${f(Math.max(...xs))})` : f(xs[0])
}

function report(samples, rounds, notes) {
  const sides = Object.keys(samples)
  const peers = sides.filter((s) => s !== 'fairfs')
  const ratios = []
  for (const [key, label] of CALLS) {
    for (const c of [1, 64]) {
      const best = Math.max(...peers.filter((s) => !s.startsWith('Deno')).map((s) => med(samples, s, `${key}.c${c}`)))
      ratios.push({ label: `${label} c=${c}: fairfs ÷ the best of node:fs, UV=64 and Bun`, value: med(samples, 'fairfs', `${key}.c${c}`) / best })
    }
  }
  const table = (c) => ({
    caption: `calls/s at c=${c}, median (min–max) of ${rounds} fresh processes per side`,
    columns: ['call', ...sides],
    rows: CALLS.map(([key, label]) => [label, ...sides.map((s) => cell(samples, s, `${key}.c${c}`))]),
  })
  const cpu = {
    caption: 'the JS thread\'s CPU per call, µs (c=1 / c=64), and the synchronous call on node (the system call\'s own cost here, the floor)',
    columns: ['call', ...sides, 'floor: sync call'],
    rows: CALLS.map(([key, label]) => [label, ...sides.map((s) => `${med(samples, s, `${key}.c1.cpuUs`).toFixed(1)} / ${med(samples, s, `${key}.c64.cpuUs`).toFixed(1)}`),
      med(samples, 'node:fs', `${key}.syncUs`).toFixed(1)]),
  }
  return {
    notes: [
      'Each side runs benches/js/peers/calls-probe.mjs in a fresh process of its own over the same files (a 1 KiB file and a folder of 100 names, in the page cache); sides alternate round by round after a warm-up round. c=64 is 64 loops, each making its next call when its last completes.',
      'CPU per call: utime + stime of the process\'s main thread (the JS thread) from /proc, over the whole case (10 ms ticks over 1 s), divided by the calls made. Deno is listed, not a goal: its fs.write and open run on the JS thread.',
      ...notes,
    ],
    tables: [table(1), table(64), cpu, { caption: 'ratios of medians (> 1 favours fairfs)', columns: ['ratio', 'value'], rows: ratios.map((r) => [r.label, fmtRatio(r.value)]) }],
    ratios,
    raw: samples,
  }
}

function version(cmd) {
  return new Promise((resolve) => execFile(cmd, ['--version'], (err, stdout) => resolve(err ? '?' : stdout.trim().split('\n')[0].replace(/^deno /, '').replace(/ \(.*$/, ''))))
}
