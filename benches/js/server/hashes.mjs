// Preloaded into a server of the request-path benchmark (`--import`): keeps
// FAIRFS_BENCH_HASHES crypto.pbkdf2 hashes in flight on libuv's pool, as a login
// endpoint under load does, and answers the parent's 'hashes' message with how many
// have finished, the event loop's utilization so far, and the main thread's time on a
// CPU and waiting for one (Linux schedstat, ns; null elsewhere).
import crypto from 'node:crypto'
import fs from 'node:fs'
import { performance } from 'node:perf_hooks'

const inFlight = Number(process.env.FAIRFS_BENCH_HASHES ?? 0)
let done = 0
function hash() {
  crypto.pbkdf2('secret', 'salt', 20_000, 64, 'sha512', () => {
    done++
    hash()
  })
}
for (let i = 0; i < inFlight; i++) hash()
function schedstat() {
  try {
    const [onCpu, waiting] = fs.readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ').map(Number)
    return { onCpu, waiting }
  } catch {
    return null
  }
}
process.on('message', (message) => {
  if (message === 'hashes') process.send({ hashes: done, loop: performance.eventLoopUtilization(), sched: schedstat() })
})
