// peers (opt-in: `npm run bench -- --peers`): the same reads and streams in node:fs,
// fairfs, Bun and Deno, each runtime in a fresh process of its own over the same files,
// rounds interleaved, medians with their spread. Bun and Deno come from the npm
// registry the first time (benches/js/peers/fetch.mjs), never during npm install.

import { execFile } from 'node:child_process'
import { ratioTable } from './common.mjs'
import { peerBinary } from './peers/fetch.mjs'
import { probe, probeSides, med, caseTable } from './probes.mjs'

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
  ]
  return {
    notes: [
      'Each runtime runs benches/js/peers/probe.mjs in a fresh process of its own: ten 16 MiB files, a thousand 1 KiB files and one 256 MiB file, all in the page cache.',
      `${rounds} interleaved rounds after a warm-up; medians (min–max). APIs: fs.promises.readFile and fs.createReadStream (node:fs, fairfs), Bun.file().bytes() and .stream(), Deno.readFile and Deno.open().readable (their own chunk sizes: no highWaterMark rows).`,
    ],
    tables: [caseTable(samples, rounds), ratioTable(ratios)],
    ratios,
    raw: samples,
  }
}

function version(cmd, args) {
  return new Promise((resolve) => execFile(cmd, args, (err, stdout) => resolve(err ? '?' : stdout.trim().split('\n')[0])))
}
