// Small-file latency while big downloads run, node:fs against fairfs.install().
//   node examples/load-test.mjs [seconds]
// Starts examples/static-server.mjs twice (plain, then with fairfs/register), and for
// each: 8 clients downloading a 256 MiB file in a loop, while autocannon measures
// 1 KiB requests. Prints a markdown table of the small-file latencies.
import { fork } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import http from 'node:http'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'

const seconds = Number(process.argv[2] ?? 10)
const here = path.dirname(fileURLToPath(import.meta.url))
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairfs-load-'))
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }))
for (let i = 0; i < 100; i++) fs.writeFileSync(path.join(dir, `small-${i}.txt`), 'x'.repeat(1024))
const big = path.join(dir, 'big.bin')
fs.writeFileSync(big, Buffer.alloc(256 * 1024 * 1024, 1))

function start(register) {
  const execArgv = register ? ['--import', 'fairfs/register'] : []
  const child = fork(path.join(here, 'static-server.mjs'), [dir, '0'], { execArgv })
  return new Promise((resolve) => child.once('message', ({ port }) => resolve({ child, port })))
}

/** Downloads the big file over and over until `until`; resolves with the bytes received. */
function downloadLoop(port, until) {
  let bytes = 0
  return new Promise((resolve) => {
    const next = () => {
      if (Date.now() > until) return resolve(bytes)
      http
        .get({ host: '127.0.0.1', port, path: '/big.bin' }, (res) => res.on('data', (c) => (bytes += c.length)).on('end', next))
        .on('error', () => resolve(bytes))
    }
    next()
  })
}

async function measure(register) {
  const { child, port } = await start(register)
  const until = Date.now() + seconds * 1000
  const downloads = Array.from({ length: 8 }, () => downloadLoop(port, until))
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: 10,
    duration: seconds,
    requests: Array.from({ length: 100 }, (_, i) => ({ path: `/small-${i}.txt` })),
  })
  const downloaded = (await Promise.all(downloads)).reduce((a, b) => a + b, 0)
  child.kill()
  return { result, mibPerSec: downloaded / 2 ** 20 / seconds }
}

const rows = []
for (const [label, register] of [['node:fs', false], ['fairfs.install()', true]]) {
  const { result: r, mibPerSec } = await measure(register)
  rows.push(
    `| ${label} | ${r.requests.average.toFixed(0)} | ${r.latency.p50} | ${r.latency.p99} | ${r.latency.max} | ${r.errors + r.non2xx} | ${mibPerSec.toFixed(0)} |`,
  )
}
console.log(`Small files (1 KiB) while 8 clients download a 256 MiB file, ${seconds} s each, ${os.cpus().length} cores:\n`)
console.log('| server | small req/s | p50 ms | p99 ms | max ms | errors | big downloads MiB/s |')
console.log('|---|---:|---:|---:|---:|---:|---:|')
console.log(rows.join('\n'))
