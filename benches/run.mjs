// Benchmark suite entry point (`npm run bench [-- --quick] [name filters...]`).
// Runs the selected benchmarks one after another in this process, prints a
// markdown section per benchmark to stdout, a progress line to stderr, and
// writes bench-results/{results.json,ratios.svg,summary.md}.

import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { fairfs, removeAllTmpDirs } from './js/common.mjs'
import { markdownSection, ratioSvg, summaryMarkdown } from './js/report.mjs'
import * as readfile from './js/readfile.mjs'
import * as writefile from './js/writefile.mjs'
import * as upload from './js/upload.mjs'
import * as slowStorage from './js/slow-storage.mjs'
import * as clogging from './js/clogging.mjs'
import * as readStream from './js/read-stream.mjs'
import * as fairness from './js/fairness.mjs'
import * as syncAsync from './js/sync-async.mjs'
import * as threadpool from './js/threadpool.mjs'
import * as batch from './js/batch.mjs'
import * as bursts from './js/bursts.mjs'
import * as server from './js/server.mjs'
import * as requestPath from './js/request-path.mjs'
import * as metadata from './js/metadata.mjs'
import * as calls from './js/calls.mjs'
import * as peers from './js/peers.mjs'
import * as fresh from './js/fresh.mjs'

const BENCHMARKS = [readfile, writefile, fresh, clogging, readStream, fairness, syncAsync, threadpool, batch, bursts, server, requestPath, upload, slowStorage, metadata, calls]
const OUT_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'bench-results')

/** What `--quick` runs when no benchmark is named: one round of the headline rows. */
const QUICK = [readfile, writefile, fairness]

/** Run only when asked for with --peers: it fetches Bun and Deno from the npm registry. */
const OPT_IN = [peers]

const USAGE = `usage: npm run bench [-- [--quick] [--peers] [filter...]]
  --quick   one short round (under 2 minutes): ${QUICK.map((b) => b.name).join(', ')}, or the benchmarks named
  --peers   also compare with Bun and Deno (fetched from the npm registry once)
  filter    run only benchmarks whose name contains one of the filters
benchmarks: ${BENCHMARKS.map((b) => b.name).join(', ')}; with --peers: ${OPT_IN.map((b) => b.name).join(', ')}`

function parseArgs(argv) {
  const opts = { quick: false, peers: false, filters: [] }
  for (const arg of argv) {
    if (arg === '--quick') opts.quick = true
    else if (arg === '--peers') opts.peers = true
    else if (arg === '--help' || arg === '-h') {
      console.log(USAGE)
      process.exit(0)
    } else if (arg.startsWith('-')) {
      console.error(`unknown option ${arg}\n${USAGE}`)
      process.exit(2)
    } else opts.filters.push(arg)
  }
  return opts
}

/** One rewritable status line on a terminal; plain lines when stderr is a file or pipe. */
function makeProgress() {
  const tty = process.stderr.isTTY
  let last = ''
  return {
    set(text) {
      if (text === last) return
      last = text
      process.stderr.write(tty ? `\r${text.slice(0, process.stderr.columns - 1)}\x1b[K` : `${text}\n`)
    },
    clear() {
      if (tty && last) process.stderr.write('\r\x1b[K')
      last = ''
    },
  }
}

function machine() {
  return {
    cpu: os.cpus()[0]?.model ?? 'unknown CPU',
    cores: os.cpus().length,
    memoryGiB: (os.totalmem() / 2 ** 30).toFixed(1),
    os: `${os.type()} ${os.arch()}`,
    kernel: os.release(),
    node: process.version,
    nodePath: process.execPath,
    uvThreadpoolSize: process.env.UV_THREADPOOL_SIZE,
    // Other busy processes skew absolute figures (ratios less so); worth knowing when reading them.
    loadAverage: os.loadavg().map((x) => x.toFixed(2)).join(' '),
  }
}

/** The command as the user typed it, as far as it can be reconstructed. */
function commandLine(args) {
  if (process.env.npm_lifecycle_event === 'bench') return `npm run bench${args.length ? ` -- ${args.join(' ')}` : ''}`
  return `node benches/run.mjs${args.length ? ` ${args.join(' ')}` : ''}`
}

async function main() {
  const args = process.argv.slice(2)
  const { quick, peers: withPeers, filters } = parseArgs(args)
  const all = [...(quick && !filters.length ? QUICK : BENCHMARKS), ...(withPeers ? OPT_IN : [])]
  const selected = all.filter((b) => !filters.length || filters.some((f) => b.name.includes(f)))
  if (!selected.length) {
    console.error(`no benchmark matches ${filters.join(', ')}\n${USAGE}`)
    process.exit(2)
  }
  const progress = makeProgress()
  const interrupt = () => {
    progress.clear()
    removeAllTmpDirs()
    process.exit(130)
  }
  process.on('SIGINT', interrupt)
  process.on('SIGTERM', interrupt)

  const meta = {
    command: commandLine(args),
    quick,
    startedAt: new Date().toISOString(),
    machine: machine(),
    fairfsPool: fairfs.stats(),
  }
  const t0 = performance.now()
  const results = []
  for (const [i, bench] of selected.entries()) {
    const prefix = `[${i + 1}/${selected.length}] ${bench.name}`
    progress.set(prefix)
    const started = performance.now()
    let result
    try {
      result = { name: bench.name, title: bench.title, ...(await bench.run({ quick, peers: withPeers, progress: (text) => progress.set(`${prefix} ${text}`) })) }
    } catch (err) {
      // One broken benchmark should not cost the results of the others.
      result = { name: bench.name, title: bench.title, notes: [], tables: [], ratios: [], error: err.stack ?? String(err) }
      process.exitCode = 1
    }
    result.seconds = (performance.now() - started) / 1000
    result.notes.push(`Took ${result.seconds.toFixed(1)} s.`)
    results.push(result)
    progress.clear()
    process.stdout.write(`${markdownSection(result)}\n\n`)
  }
  removeAllTmpDirs()
  meta.durationSeconds = (performance.now() - t0) / 1000
  // Taken again at the end: what the pool ran with (the census of libuv's threads, if
  // any, has finished by now).
  meta.fairfsPool = fairfs.stats()

  fs.mkdirSync(OUT_DIR, { recursive: true })
  fs.writeFileSync(path.join(OUT_DIR, 'results.json'), `${JSON.stringify({ ...meta, results }, null, 2)}\n`)
  const m = meta.machine
  fs.writeFileSync(path.join(OUT_DIR, 'ratios.svg'), ratioSvg(results, `${m.cpu}, ${m.cores} cores, Node ${m.node}, ${quick ? 'quick' : 'full'} run ${meta.startedAt}`))
  fs.writeFileSync(path.join(OUT_DIR, 'summary.md'), summaryMarkdown(meta, results))
  process.stderr.write(`done in ${meta.durationSeconds.toFixed(0)} s; results in ${path.relative(process.cwd(), OUT_DIR) || '.'}/{results.json,ratios.svg,summary.md}\n`)
}

await main()
