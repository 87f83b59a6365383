// Preloaded into a server of the request-path benchmark (`--import`): keeps
// FAIRFS_BENCH_HASHES crypto.pbkdf2 hashes in flight on libuv's pool, as a login
// endpoint under load does, and answers the parent's 'hashes' message with how many
// have finished.
import crypto from 'node:crypto'

const inFlight = Number(process.env.FAIRFS_BENCH_HASHES ?? 0)
let done = 0
function hash() {
  crypto.pbkdf2('secret', 'salt', 20_000, 64, 'sha512', () => {
    done++
    hash()
  })
}
for (let i = 0; i < inFlight; i++) hash()
process.on('message', (message) => {
  if (message === 'hashes') process.send({ hashes: done })
})
