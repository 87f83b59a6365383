// server: a real static file server under load, node:fs against fairfs/register.
// Each measurement starts the server in a process of its own (examples/static-server.mjs
// on plain http, or fastify with @fastify/static), then two load generators, each a
// process of its own: downloaders looping over a big file, and autocannon asking for
// 1 KiB files. Where the machine lets us (root, cgroup v1 or v2 `cpu`), the two load
// generators share a fixed budget of one CPU, so the server, not the clients, decides
// the figures. Sides are interleaved over rounds; medians.

import fs from 'node:fs'
import path from 'node:path'
import { fork, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { KiB, MiB, interleave, median, makeTmpDir, removeTmpDir, writeFilled, fmtNum, ratioTable, fmtSize } from './common.mjs'

export const name = 'server'
export const title = 'server: 1 KiB requests next to big downloads, node:fs vs fairfs/register, plain http and fastify'

const here = path.dirname(fileURLToPath(import.meta.url))
const repo = path.join(here, '..', '..')
export const SERVERS = {
  http: path.join(repo, 'examples', 'static-server.mjs'),
  fastify: path.join(here, 'server', 'fastify-server.mjs'),
  express: path.join(here, 'server', 'express-server.mjs'),
  koa: path.join(here, 'server', 'koa-server.mjs'),
  upload: path.join(here, 'server', 'upload-server.mjs'),
}
const SIDES = ['http node:fs', 'http fairfs', 'fastify node:fs', 'fastify fairfs']
const DOWNLOADERS = 4
const CONNECTIONS = 10
/** The load generators' CPU budget, in CPUs. */
const CLIENT_CPUS = 1

/** A cgroup holding the load generators to CLIENT_CPUS, or null where we may not make one. */
function clientCgroup() {
  const v1 = '/sys/fs/cgroup/cpu'
  const candidates = [
    { dir: path.join(v1, 'fairfs-bench-clients'), limit: (d) => {
      fs.writeFileSync(path.join(d, 'cpu.cfs_period_us'), '100000')
      fs.writeFileSync(path.join(d, 'cpu.cfs_quota_us'), String(100000 * CLIENT_CPUS))
    } },
    { dir: '/sys/fs/cgroup/fairfs-bench-clients', limit: (d) => fs.writeFileSync(path.join(d, 'cpu.max'), `${100000 * CLIENT_CPUS} 100000`) },
  ]
  for (const { dir, limit } of candidates) {
    try {
      fs.mkdirSync(dir, { recursive: true })
      limit(dir)
      return {
        dir,
        add: (pid) => fs.writeFileSync(path.join(dir, 'cgroup.procs'), String(pid)),
        remove: () => fs.rmdirSync(dir),
      }
    } catch {
      try { fs.rmdirSync(dir) } catch {}
    }
  }
  return null
}

/**
 * What a child printed on stderr, the last 16 KiB of it: shown only if the child fails,
 * so that a server's logged premature closes (clients cut off at the end of a round)
 * do not fill the screen between the tables.
 */
function stderrTail(child) {
  let tail = ''
  child.stderr.setEncoding('utf8').on('data', (d) => { tail = (tail + d).slice(-16384) })
  return () => tail
}

/** Starts server `kind` (a key of SERVERS) on `dir` in a process of its own; resolves with it and its port. */
export function launchServer(kind, dir, { execArgv = [], env = process.env } = {}) {
  const child = fork(SERVERS[kind], [dir, '0'], { execArgv, env, cwd: repo, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] })
  const stderr = stderrTail(child)
  return new Promise((resolve, reject) => {
    child.once('message', ({ port }) => resolve({ child, port }))
    child.once('exit', (code) => reject(new Error(`${kind} server exited with ${code}\n${stderr()}`)))
  })
}

function startServer(side, dir) {
  const [kind, lib] = side.split(' ')
  return launchServer(kind, dir, { execArgv: lib === 'fairfs' ? ['--import', 'fairfs/register'] : [] })
}

/** Runs a load generator script of server/; resolves with the JSON it prints. */
export function generator(script, args, cgroup) {
  const proc = spawn(process.execPath, [path.join(here, 'server', script), ...args.map(String)], { stdio: ['ignore', 'pipe', 'pipe'] })
  cgroup?.add(proc.pid)
  const stderr = stderrTail(proc)
  let out = ''
  proc.stdout.setEncoding('utf8').on('data', (d) => { out += d })
  return new Promise((resolve, reject) => {
    proc.on('error', reject)
    proc.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`${script} exited with ${code}\n${stderr()}`))))
  })
}

export async function run({ quick, progress }) {
  const bigSize = quick ? 64 * MiB : 256 * MiB
  const durationMs = quick ? 2000 : 5000
  const rounds = quick ? 1 : 3
  const dir = makeTmpDir(name)
  const cgroup = clientCgroup()
  let samples
  try {
    for (let i = 0; i < 100; i++) writeFilled(path.join(dir, `small-${i}.txt`), KiB, 's')
    progress(`writing ${fmtSize(bigSize)} file`)
    writeFilled(path.join(dir, 'big.bin'), bigSize, 'b')
    samples = await interleave(SIDES, rounds, async (side) => {
      const { child, port } = await startServer(side, dir)
      try {
        const [downloads, smalls] = await Promise.all([
          generator('downloads.mjs', [port, DOWNLOADERS, durationMs], cgroup),
          generator('smalls.mjs', [port, CONNECTIONS, durationMs], cgroup),
        ])
        if (smalls.errors > 0) throw new Error(`${side}: ${smalls.errors} small requests failed`)
        return { ...smalls, downloadMiBPerSec: downloads.bytes / MiB / downloads.seconds }
      } finally {
        child.kill()
      }
    }, progress)
  } finally {
    removeTmpDir(dir)
    try { cgroup?.remove() } catch {}
  }
  const med = (side, key) => median(samples[side].map((s) => s[key]))
  const rows = SIDES.map((side) => [side, fmtNum(med(side, 'requests')), fmtNum(med(side, 'p50')), fmtNum(med(side, 'p99')),
    fmtNum(med(side, 'downloadMiBPerSec'))])
  const ratios = []
  for (const kind of ['http', 'fastify']) {
    const node = `${kind} node:fs`
    const ff = `${kind} fairfs`
    ratios.push(
      { label: `${kind}: small p99, node ÷ fairfs`, value: med(node, 'p99') / med(ff, 'p99') },
      { label: `${kind}: small req/s, fairfs ÷ node`, value: med(ff, 'requests') / med(node, 'requests') },
      { label: `${kind}: download MiB/s, fairfs ÷ node`, value: med(ff, 'downloadMiBPerSec') / med(node, 'downloadMiBPerSec') },
    )
  }
  return {
    notes: [
      `Server: one process per measurement, node:fs or \`--import fairfs/register\`; plain http is examples/static-server.mjs (stream over 1 MiB, readFile below), fastify ${fastifyVersion()} with @fastify/static (streams).`,
      `Load, each in a process of its own for ${durationMs} ms: ${DOWNLOADERS} clients downloading a ${fmtSize(bigSize)} file in a loop, and autocannon with ${CONNECTIONS} connections over 100 different 1 KiB files.`,
      cgroup ? `The two load generators share a fixed budget of ${CLIENT_CPUS} CPU (cgroup ${cgroup.dir}).` : 'No cgroup could be made here: the load generators run unbudgeted.',
      `${rounds} interleaved rounds; medians.`,
    ],
    tables: [{
      caption: 'small-file latency in ms (autocannon), and the downloads\' MiB/s in the same runs',
      columns: ['server', 'small req/s', 'small p50', 'small p99', 'download MiB/s'],
      rows,
    }, ratioTable(ratios)],
    ratios,
    raw: samples,
  }
}

function fastifyVersion() {
  try {
    return JSON.parse(fs.readFileSync(path.join(repo, 'node_modules', 'fastify', 'package.json'), 'utf8')).version
  } catch {
    return '(version unknown)'
  }
}
