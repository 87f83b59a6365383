// fresh: node:fs and fairfs each in a process of its own, as a server meets them after
// a start: ten different 16 MiB files at c=1 and c=10, 1 KiB reads, a 1 KiB read every
// 2 ms under ten 256 MiB readers (with the GCs it ran), and 256 MiB streams.

import { fmtRatio } from './common.mjs'
import { probe, probeSides, med, caseTable, CASES } from './probes.mjs'

export const name = 'fresh'
export const title = 'fresh: node:fs and fairfs in fresh processes'

export async function run({ quick, progress }) {
  const rounds = quick ? 1 : 3
  const sides = {
    'node:fs': [process.execPath, [probe, 'node']],
    fairfs: [process.execPath, [probe, 'fairfs']],
  }
  const samples = await probeSides(sides, { quick, progress, rounds })
  const ratios = CASES.filter(([key]) => Number.isFinite(med(samples, 'fairfs', key) / med(samples, 'node:fs', key)))
    .map(([key, label, higher]) => {
      const [f, n] = [med(samples, 'fairfs', key), med(samples, 'node:fs', key)]
      return { label: `${label}: ${higher ? 'fairfs ÷ node:fs' : 'node:fs ÷ fairfs'}`, value: higher ? f / n : n / f }
    })
  ratios.push({ label: '16 MiB: fairfs c=10 ÷ fairfs c=1', value: med(samples, 'fairfs', 'big10') / med(samples, 'fairfs', 'big1') })
  return {
    notes: [
      'Each side runs benches/js/peers/probe.mjs in a process of its own (fresh V8 heap, empty buffer pool), over the same files, all in the page cache; sides alternate round by round after a warm-up round.',
      '16 MiB cases: ten different files, 1.5 s per concurrency. Latency: a 1 KiB read issued every 2 ms for 3 s, timed from its issue; GC counts from PerformanceObserver.',
    ],
    tables: [caseTable(samples, rounds), {
      caption: 'ratios of medians (> 1 favours fairfs)',
      columns: ['ratio', 'value'],
      rows: ratios.map((r) => [r.label, fmtRatio(r.value)]),
    }],
    ratios,
    raw: samples,
  }
}
