// peers (opt-in: `npm run bench -- --peers`): the same reads in node:fs, fairfs, Bun
// and Deno, each runtime in a process of its own over the same files, rounds
// interleaved, medians. Bun and Deno come from the npm registry the first time
// (benches/js/peers/fetch.mjs), never during npm install.

import path from 'node:path'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { KiB, MiB, interleave, median, makeTmpDir, removeTmpDir, writeFilled, fmtNum, ratioTable } from './common.mjs'
import { peerBinary } from './peers/fetch.mjs'

export const name = 'peers'
export const title = 'peers: readFile in node:fs, fairfs, Bun and Deno'

const probe = path.join(path.dirname(fileURLToPath(import.meta.url)), 'peers', 'probe.mjs')
const CASES = [
  ['big1', '16 MiB c=1, reads/s'],
  ['big10', '16 MiB c=10, reads/s'],
  ['small1', '1 KiB c=1, reads/s'],
  ['small10', '1 KiB c=10, reads/s'],
  ['p99ms', '1 KiB p99 under ten 256 MiB readers, ms'],
]

function runProbe(cmd, args) {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`${cmd} ${args.join(' ')}: ${err.message}\n${stderr}`))
      resolve(JSON.parse(stdout.trim().split('\n').pop()))
    })
  })
}

export async function run({ quick, progress }) {
  progress('fetching Bun')
  const bun = peerBinary('bun')
  progress('fetching Deno')
  const deno = peerBinary('deno')
  const q = quick ? '1' : '0'
  const sides = {
    'node:fs (promises.readFile)': [process.execPath, [probe, 'node']],
    'fairfs (promises.readFile)': [process.execPath, [probe, 'fairfs']],
    [`Bun ${await version(bun, ['--version'])} (Bun.file().bytes())`]: [bun, [probe, 'bun']],
    [`Deno ${(await version(deno, ['--version'])).split(' ')[1]} (Deno.readFile)`]: [deno, ['run', '-A', probe, 'deno']],
  }
  const dir = makeTmpDir(name)
  let samples
  try {
    progress('writing files')
    for (let i = 0; i < 10; i++) writeFilled(path.join(dir, `big-${i}`), 16 * MiB, String(i))
    for (let i = 0; i < 1000; i++) writeFilled(path.join(dir, `small-${i}`), KiB, 's')
    writeFilled(path.join(dir, 'huge.bin'), 256 * MiB, 'h')
    samples = await interleave(Object.keys(sides), quick ? 1 : 3, (side) => {
      const [cmd, args] = sides[side]
      return runProbe(cmd, [...args, dir, q])
    }, progress)
  } finally {
    removeTmpDir(dir)
  }
  const med = (side, key) => median(samples[side].map((s) => s[key]))
  const names = Object.keys(sides)
  const [node, ff, bunSide, denoSide] = names
  const ratios = [
    { label: '16 MiB c=10: fairfs ÷ node:fs', value: med(ff, 'big10') / med(node, 'big10') },
    { label: '16 MiB c=10: fairfs ÷ Bun', value: med(ff, 'big10') / med(bunSide, 'big10') },
    { label: '16 MiB c=10: fairfs ÷ Deno', value: med(ff, 'big10') / med(denoSide, 'big10') },
    { label: '1 KiB c=1: fairfs ÷ Bun', value: med(ff, 'small1') / med(bunSide, 'small1') },
    { label: '1 KiB p99 under load: Bun ÷ fairfs', value: med(bunSide, 'p99ms') / med(ff, 'p99ms') },
  ]
  return {
    notes: [
      'Each runtime runs benches/js/peers/probe.mjs in a process of its own: ten 16 MiB files, a thousand 1 KiB files and one 256 MiB file, all in the page cache.',
      `${quick ? 1 : 3} interleaved rounds; medians. ${quick ? 400 : 1500} ms per case.`,
    ],
    tables: [{
      caption: 'reads/s (higher is better) and p99 in ms (lower is better)',
      columns: ['runtime (API)', ...CASES.map(([, label]) => label)],
      rows: names.map((side) => [side, ...CASES.map(([key]) => fmtNum(med(side, key)))]),
    }, ratioTable(ratios)],
    ratios,
    raw: samples,
  }
}

function version(cmd, args) {
  return new Promise((resolve) => execFile(cmd, args, (err, stdout) => resolve(err ? '?' : stdout.trim().split('\n')[0])))
}
