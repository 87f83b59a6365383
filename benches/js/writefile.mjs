// writefile: whole-file writes beside node:fs. Node's benchmark/fs/writefile-promises.js
// grid (files/s by size and concurrency), a small write's latency while ten writers
// loop over 64 MiB files, and appendFile records from ten writers into one log.

import path from 'node:path'
import { execFileSync } from 'node:child_process'
import {
  KiB, MiB, fs, fsp, fairfs, interleave, medians, ratePerSecond, percentile, sleep, msSince,
  makeTmpDir, removeTmpDir, fmtSize, fmtNum, fmtRatio,
} from './common.mjs'

export const name = 'writefile'
export const title = 'writefile: whole-file writes (writeFile, appendFile) beside node:fs'

const SIDES = ['node-cb', 'node-promises', 'fairfs-cb', 'fairfs-promise']

/** Each side's writeFile as `(file, data, done)`. */
const writers = {
  'node-cb': (file, data, done) => fs.writeFile(file, data, done),
  'node-promises': (file, data, done) => fsp.writeFile(file, data).then(() => done(), done),
  'fairfs-cb': (file, data, done) => fairfs.writeFile(file, data, done),
  'fairfs-promise': (file, data, done) => fairfs.promises.writeFile(file, data).then(() => done(), done),
}

/**
 * Files/s: `concurrent` loops, each rewriting a file of its own: a write takes a file
 * no other write in flight has, and gives it back when done. (Taking the files in turn
 * instead let two writes of one file overlap, which fairfs runs one after the other,
 * as issue 51 asks, and node:fs at once.)
 */
function rate(side, dir, data, concurrent, durationMs) {
  const free = Array.from({ length: concurrent }, (_, i) => path.join(dir, `${side}-${i}`))
  return ratePerSecond(concurrent, durationMs, (done) => {
    const file = free.pop()
    writers[side](file, data, (err) => {
      free.push(file)
      done(err)
    })
  })
}

/**
 * A 1 KiB promises.writeFile and a stat, one after the other every 5 ms, while ten
 * writers loop over 64 MiB files, all on `side`'s API: each call's latency.
 */
async function latencyBeside(side, dir, durationMs) {
  const api = side === 'node' ? { writeFile: fs.writeFile, promises: fsp } : { writeFile: fairfs.writeFile, promises: fairfs.promises }
  const stat = side === 'node' ? fsp.stat : (p) => new Promise((resolve, reject) => fairfs.stat(p, (e, s) => (e ? reject(e) : resolve(s))))
  const big = Buffer.alloc(64 * MiB, 'b')
  const small = Buffer.alloc(KiB, 's')
  let running = true
  const loops = Array.from({ length: 10 }, (_, i) => new Promise((resolve, reject) => {
    const file = path.join(dir, `${side}-big-${i}`)
    const again = (err) => (err ? reject(err) : running ? api.writeFile(file, big, again) : resolve())
    again()
  }))
  await sleep(100) // the writers are under way
  const writes = []
  const stats = []
  const probe = path.join(dir, `${side}-small`)
  const end = performance.now() + durationMs
  while (performance.now() < end) {
    let t0 = process.hrtime.bigint()
    await api.promises.writeFile(probe, small)
    writes.push(msSince(t0))
    t0 = process.hrtime.bigint()
    await stat(probe)
    stats.push(msSince(t0))
    await sleep(5)
  }
  running = false
  await Promise.all(loops)
  return { writeP50: percentile(writes, 50), writeP99: percentile(writes, 99), statP50: percentile(stats, 50), statP99: percentile(stats, 99) }
}

/**
 * GB/s of a 256 MiB WriteStream in `chunk`-byte writes that wait for 'drain': node:fs's
 * own stream, which under install() opens, writes and closes on fairfs's pool; on the
 * 'behind' side with configure({ writeBehind: true }) (the next chunk queued behind the
 * write running).
 */
async function streamRate(side, dir, chunk, total) {
  if (side === 'behind') fairfs.configure({ writeBehind: true })
  if (side !== 'node') fairfs.install()
  try {
    // A new file, after `sync`: the stream pays neither for truncating the last one nor
    // for the writeback the phases before it left (more after fairfs's, which write more).
    const file = path.join(dir, `${side}-stream`)
    fs.rmSync(file, { force: true })
    execFileSync('sync')
    const data = Buffer.alloc(chunk, 's')
    const t0 = process.hrtime.bigint()
    const ws = fs.createWriteStream(file)
    for (let written = 0; written < total; written += chunk) {
      if (!ws.write(data)) await new Promise((resolve) => ws.once('drain', resolve))
    }
    await new Promise((resolve, reject) => ws.end((err) => (err ? reject(err) : resolve())))
    await new Promise((resolve) => (ws.closed ? resolve() : ws.once('close', resolve)))
    const seconds = msSince(t0) / 1000
    if (fs.statSync(file).size !== total) throw new Error(`${side}: the stream wrote ${fs.statSync(file).size} bytes`)
    return total / seconds / 1e9
  } finally {
    if (side !== 'node') fairfs.uninstall()
    if (side === 'behind') fairfs.configure({ writeBehind: false })
  }
}

/** pbkdf2 hashes/s kept in flight four at a time for `ms`, beside four loops of 64 MiB writeFiles on `side` (or none). */
async function hashesBeside(side, dir, ms) {
  const crypto = await import('node:crypto')
  const writeFile = side === 'node' ? fs.writeFile : side === 'fairfs' ? fairfs.writeFile : null
  const big = Buffer.alloc(64 * MiB, 'c')
  let running = true
  const loops = writeFile
    ? Array.from({ length: 4 }, (_, i) => new Promise((resolve, reject) => {
      const file = path.join(dir, `${side}-clog-${i}`)
      const again = (err) => (err ? reject(err) : running ? writeFile(file, big, again) : resolve())
      again()
    }))
    : []
  let hashes = 0
  const end = performance.now() + ms
  const t0 = process.hrtime.bigint()
  await Promise.all(Array.from({ length: 4 }, () => new Promise((resolve) => {
    const again = () => (performance.now() < end ? crypto.pbkdf2('secret', 'salt', 20_000, 64, 'sha512', () => { hashes++; again() }) : resolve())
    again()
  })))
  const rate = hashes / (msSince(t0) / 1000)
  running = false
  await Promise.all(loops)
  return rate
}

/** appendFile records/s from ten writers into one log; every record must be whole. */
async function appendRate(side, dir, durationMs) {
  const log = path.join(dir, `${side}.log`)
  fs.writeFileSync(log, '')
  const append = side === 'node' ? fs.appendFile : fairfs.appendFile
  let n = 0
  const rate = await ratePerSecond(10, durationMs, (done) => {
    const i = n++
    append(log, `${String(i).padStart(12, '0')} ${'r'.repeat(86)}\n`, done)
  })
  const lines = fs.readFileSync(log, 'latin1').split('\n')
  lines.pop()
  const torn = lines.filter((l) => l.length !== 99 || !/^\d{12} r{86}$/.test(l)).length
  if (torn > 0 || lines.length !== n) throw new Error(`${side}: ${torn} torn records, ${lines.length} of ${n} found`)
  return rate
}

export async function run({ quick, progress }) {
  const durationMs = quick ? 150 : 800
  const rounds = quick ? 2 : 5
  const dir = makeTmpDir(name)
  const rows = []
  const ratios = []
  const raw = { grid: [], latency: null, appends: null }
  try {
    for (const len of [KiB, 16 * MiB]) {
      const data = Buffer.alloc(len, 'w')
      for (const concurrent of [1, 10]) {
        const label = `len=${fmtSize(len)} c=${concurrent}`
        const samples = await interleave(SIDES, rounds, (side) => rate(side, dir, data, concurrent, durationMs), (p) => progress(`${label} ${p}`))
        const m = medians(samples)
        raw.grid.push({ len, concurrent, samples })
        rows.push([fmtSize(len), String(concurrent), ...SIDES.map((s) => fmtNum(m[s])),
          fmtRatio(m['fairfs-cb'] / m['node-cb']), fmtRatio(m['fairfs-promise'] / m['node-promises'])])
        ratios.push({ label: `writeFile ${fmtSize(len)} c=${concurrent}: fairfs cb ÷ node cb`, value: m['fairfs-cb'] / m['node-cb'] })
      }
    }
    const latency = await interleave(['node', 'fairfs'], quick ? 1 : 3, (side) => latencyBeside(side, dir, quick ? 500 : 2000), (p) => progress(`beside 64 MiB writers ${p}`))
    raw.latency = latency
    const lat = (side, key) => percentile(latency[side].map((r) => r[key]), 50)
    const appends = await interleave(['node', 'fairfs'], rounds, (side) => appendRate(side, dir, durationMs), (p) => progress(`appendFile ${p}`))
    raw.appends = appends
    const am = medians(appends)
    const streams = {}
    for (const chunk of [16 * KiB, 64 * KiB]) {
      const samples = await interleave(['node', 'fairfs', 'behind'], quick ? 1 : 3, (side) => streamRate(side, dir, chunk, quick ? 64 * MiB : 256 * MiB), (p) => progress(`WriteStream ${fmtSize(chunk)} ${p}`))
      streams[chunk] = medians(samples)
      raw[`stream${chunk}`] = samples
      ratios.push({ label: `WriteStream ${fmtSize(chunk)} writes, GB/s: fairfs (install) ÷ node:fs`, value: streams[chunk].fairfs / streams[chunk].node })
      ratios.push({ label: `WriteStream ${fmtSize(chunk)} writes, GB/s: fairfs (install, writeBehind) ÷ node:fs`, value: streams[chunk].behind / streams[chunk].node })
    }
    const clog = medians(await interleave(['alone', 'node', 'fairfs'], quick ? 1 : 3, (side) => hashesBeside(side, dir, quick ? 1000 : 3000), (p) => progress(`pbkdf2 beside big writers ${p}`)))
    ratios.push({ label: 'pbkdf2 rate kept beside 4 looping 64 MiB writeFiles: fairfs (share of alone)', value: clog.fairfs / clog.alone })
    ratios.push({ label: 'appendFile records/s, 10 writers, one log: fairfs ÷ node', value: am.fairfs / am.node })
    ratios.push({ label: '1 KiB promises.writeFile p99 beside ten 64 MiB writers: node ÷ fairfs', value: lat('node', 'writeP99') / lat('fairfs', 'writeP99') })
    return {
      notes: [
        `${rounds} interleaved rounds of ${durationMs} ms per side; each side rewrites files of its own (one per concurrent loop).`,
        'Latency: a 1 KiB fs.promises.writeFile then a stat every 5 ms for 2 s while ten loops rewrite 64 MiB files with callback writeFile, all on the side\'s own API; medians of the rounds\' percentiles.',
        'appendFile: ten loops append 100-byte records to one log; the log is checked for torn or missing records after each round.',
      ],
      tables: [
        {
          caption: 'writes/s (median); ratios > 1 = fairfs faster',
          columns: ['len', 'c', ...SIDES.map((s) => s.replace('-', ' ')), 'fairfs cb ÷ node cb', 'fairfs promise ÷ node promises'],
          rows,
        },
        {
          caption: 'beside ten looping 64 MiB writeFiles: latency in ms (median of rounds)',
          columns: ['side', 'write p50', 'write p99', 'stat p50', 'stat p99'],
          rows: ['node', 'fairfs'].map((s) => [s, ...['writeP50', 'writeP99', 'statP50', 'statP99'].map((k) => lat(s, k).toFixed(2))]),
        },
        {
          caption: 'a 256 MiB WriteStream, GB/s (median): node:fs\'s own stream, on node:fs, under install() on fairfs, and with configure({ writeBehind: true }); each stream to a new file after `sync`',
          columns: ['writes', 'node:fs', 'fairfs', 'fairfs writeBehind', 'fairfs ÷ node:fs', 'writeBehind ÷ node:fs'],
          rows: Object.entries(streams).map(([chunk, m]) => [fmtSize(Number(chunk)), m.node.toFixed(2), m.fairfs.toFixed(2), m.behind.toFixed(2), fmtRatio(m.fairfs / m.node), fmtRatio(m.behind / m.node)]),
        },
        {
          caption: 'pbkdf2 hashes/s (4 in flight) alone and beside four looping 64 MiB writeFiles (median)',
          columns: ['alone', 'beside node:fs writers', 'beside fairfs writers', 'kept: node:fs', 'kept: fairfs'],
          rows: [[fmtNum(clog.alone), fmtNum(clog.node), fmtNum(clog.fairfs), `${Math.round((100 * clog.node) / clog.alone)}%`, `${Math.round((100 * clog.fairfs) / clog.alone)}%`]],
        },
        {
          caption: 'appendFile records/s, ten writers, one log (median), none torn',
          columns: ['node', 'fairfs', 'fairfs ÷ node'],
          rows: [[fmtNum(am.node), fmtNum(am.fairfs), fmtRatio(am.fairfs / am.node)]],
        },
      ],
      ratios,
      raw,
    }
  } finally {
    removeTmpDir(dir)
  }
}
