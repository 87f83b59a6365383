// A load generator of the server benchmark, in a process of its own: `n` clients
// download `/big.bin` over and over for `ms`, then print {bytes, seconds} as JSON.
//   node downloads.mjs <port> <n> <ms>
import http from 'node:http'

const [port, n, ms] = process.argv.slice(2).map(Number)
const agent = new http.Agent({ keepAlive: true, maxSockets: n })
const until = Date.now() + ms
const t0 = process.hrtime.bigint()
let bytes = 0
function loop() {
  return new Promise((resolve) => {
    const next = () => {
      if (Date.now() >= until) return resolve()
      http.get({ host: '127.0.0.1', port, path: '/big.bin', agent }, (res) => {
        res.on('data', (c) => (bytes += c.length))
        res.on('end', next)
        res.on('error', resolve)
      }).on('error', resolve)
    }
    next()
  })
}
await Promise.all(Array.from({ length: n }, loop))
console.log(JSON.stringify({ bytes, seconds: Number(process.hrtime.bigint() - t0) / 1e9 }))
agent.destroy()
