// peers (opt-in: `npm run bench -- --peers`): the same reads and streams in node:fs,
// fairfs, Bun and Deno, each runtime in a fresh process of its own over the same files,
// rounds interleaved, medians with their spread. Bun and Deno come from the npm
// registry the first time (benches/js/peers/fetch.mjs), never during npm install.

import path from 'node:path'
import fs from 'node:fs'
import { execFile, execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { ratioTable, interleave, makeTmpDir, removeTmpDir } from './common.mjs'
import { peerBinary } from './peers/fetch.mjs'
import { probe, probeSides, runProbe, med, caseTable } from './probes.mjs'

export const name = 'peers'
export const title = 'peers: readFile and streams in node:fs, fairfs, Bun and Deno'

export async function run({ quick, progress }) {
  progress('fetching Bun')
  const bun = peerBinary('bun')
  progress('fetching Deno')
  const deno = peerBinary('deno')
  const rounds = quick ? 1 : 3
  const sides = {
    'node:fs': [process.execPath, [probe, 'node']],
    fairfs: [process.execPath, [probe, 'fairfs']],
    [`Bun ${await version(bun, ['--version'])}`]: [bun, [probe, 'bun']],
    [`Deno ${(await version(deno, ['--version'])).split(' ')[1]}`]: [deno, ['run', '-A', probe, 'deno']],
  }
  const samples = await probeSides(sides, { quick, progress, rounds })
  const writes = await writeSides(sides, { quick, progress, rounds })
  const [node, ff, bunSide, denoSide] = Object.keys(sides)
  const m = (side, key) => med(samples, side, key)
  const ratios = [
    { label: '16 MiB c=10: fairfs ÷ node:fs', value: m(ff, 'big10') / m(node, 'big10') },
    { label: '16 MiB c=10: fairfs ÷ Bun', value: m(ff, 'big10') / m(bunSide, 'big10') },
    { label: '16 MiB c=10: fairfs ÷ Deno', value: m(ff, 'big10') / m(denoSide, 'big10') },
    { label: '16 MiB: fairfs c=10 ÷ fairfs c=1', value: m(ff, 'big10') / m(ff, 'big1') },
    { label: '1 KiB c=1: fairfs ÷ Bun', value: m(ff, 'small1') / m(bunSide, 'small1') },
    { label: '1 KiB p99 under load: Bun ÷ fairfs', value: m(bunSide, 'p99ms') / m(ff, 'p99ms') },
    { label: '256 MiB stream, for await: fairfs ÷ Bun', value: m(ff, 'streamForAwait') / m(bunSide, 'streamForAwait') },
    { label: '16 MiB writeFile c=1: fairfs ÷ Bun', value: med(writes, ff, 'write16Mc1') / med(writes, bunSide, 'write16Mc1') },
    { label: '16 MiB writeFile c=10: fairfs ÷ Bun', value: med(writes, ff, 'write16Mc10') / med(writes, bunSide, 'write16Mc10') },
    { label: '256 MiB WriteStream, 64 KiB writes: fairfs ÷ the faster of Bun and Deno', value: med(writes, ff, 'stream64K') / Math.max(med(writes, bunSide, 'stream64K'), med(writes, denoSide, 'stream64K')) },
    { label: 'the same, fairfs with writeBehind ÷ the faster of Bun and Deno', value: med(writes, ff, 'stream64KBehind') / Math.max(med(writes, bunSide, 'stream64K'), med(writes, denoSide, 'stream64K')) },
  ]
  return {
    notes: [
      'Each runtime runs benches/js/peers/probe.mjs in a fresh process of its own: ten 16 MiB files, a thousand 1 KiB files and one 256 MiB file, all in the page cache.',
      `${rounds} interleaved rounds after a warm-up; medians (min–max). APIs: fs.promises.readFile and fs.createReadStream (node:fs, fairfs), Bun.file().bytes() and .stream(), Deno.readFile and Deno.open().readable (their own chunk sizes: no highWaterMark rows).`,
      'Writes (benches/js/peers/write-probe.mjs): each round runs the writeFile cases in one fresh process per runtime, then its WriteStream in another, to a new file after `sync`; fairfs with writeBehind streams in a process of its own too.',
    ],
    tables: [caseTable(samples, rounds), writeTable(writes, rounds), ratioTable(ratios)],
    ratios,
    raw: { reads: samples, writes },
  }
}

const writeProbe = path.join(path.dirname(fileURLToPath(import.meta.url)), 'peers', 'write-probe.mjs')
const WRITE_CASES = [
  ['write16Mc1', '16 MiB writeFile c=1, files/s'],
  ['write16Mc10', '16 MiB writeFile c=10, files/s'],
  ['write1Kc1', '1 KiB writeFile c=1, files/s'],
  ['small1KBesideBigP99ms', '1 KiB writeFile p99 beside ten 64 MiB writers, ms (lower is better)'],
  ['stream64K', '256 MiB WriteStream, 64 KiB writes, GB/s'],
  ['stream64KBehind', 'the same, fairfs with configure({ writeBehind: true }), GB/s'],
]

/** The side of fairfs's streams with configure({ writeBehind: true }). */
const BEHIND = 'fairfs writeBehind'

/**
 * The write probe in each side's runtime, fresh processes, rounds interleaved: the
 * writeFile cases in one process, then the stream in another, in an empty directory
 * after `sync` (the files written before it would otherwise be written back during
 * it, more for a runtime that wrote more). fairfs streams a second time with
 * writeBehind, as a side of its own.
 */
async function writeSides(sides, { quick, progress, rounds }) {
  const dir = makeTmpDir('write-probes')
  const [, ff] = Object.keys(sides)
  const [ffCmd, ffArgs] = sides[ff]
  const runs = { ...sides, [BEHIND]: [ffCmd, ffArgs.map((a) => (a === 'fairfs' ? 'fairfs-behind' : a))] }
  const probeIn = (side, part, where) => {
    const [cmd, args] = runs[side]
    // The same runtime arguments, the write probe in place of the read probe.
    return runProbe(cmd, [...args.map((a) => (a === probe ? writeProbe : a)), where, quick ? '1' : '0', part])
  }
  try {
    const samples = await interleave(Object.keys(runs), rounds, async (side) => {
      const files = side === BEHIND ? {} : await probeIn(side, 'files', dir)
      const own = fs.mkdtempSync(path.join(dir, 'stream-'))
      try {
        execFileSync('sync')
        return { ...files, ...(await probeIn(side, 'stream', own)) }
      } finally {
        fs.rmSync(own, { recursive: true, force: true })
      }
    }, (p) => progress(`writes ${p}`))
    // writeBehind's streams are the fairfs side's second figure.
    samples[ff].forEach((s, i) => { s.stream64KBehind = samples[BEHIND][i].stream64K })
    delete samples[BEHIND]
    return samples
  } finally {
    removeTmpDir(dir)
  }
}

function writeTable(samples, rounds) {
  const names = Object.keys(samples)
  const cellOf = (n, key) => {
    const xs = samples[n].map((s) => s[key])
    if (xs.some((x) => x === undefined)) return '—'
    const mid = med(samples, n, key)
    return `${mid.toFixed(mid < 10 ? 2 : 0)} (${Math.min(...xs).toFixed(mid < 10 ? 2 : 0)}–${Math.max(...xs).toFixed(mid < 10 ? 2 : 0)})`
  }
  return {
    caption: `writes through each runtime's node:fs (fairfs: after install()): median (min–max) of ${rounds} fresh processes per side`,
    columns: ['case', ...names],
    rows: WRITE_CASES.map(([key, label]) => [label, ...names.map((n) => cellOf(n, key))]),
  }
}

function version(cmd, args) {
  return new Promise((resolve) => execFile(cmd, args, (err, stdout) => resolve(err ? '?' : stdout.trim().split('\n')[0])))
}
