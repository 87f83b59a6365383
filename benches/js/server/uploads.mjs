// A load generator of the upload benchmark, in a process of its own: autocannon posts
// a 64 KiB file as multipart/form-data over `connections` connections for `ms`, then
// prints {requests, answered, p50, p90, p99, errors} as JSON (latencies in ms;
// `answered`: uploads the server answered with 2xx).
//   node uploads.mjs <port> <connections> <ms>
import autocannon from 'autocannon'

const [port, connections, ms] = process.argv.slice(2).map(Number)
const boundary = 'fairfs-bench-boundary'
const file = Buffer.alloc(64 * 1024, 'u')
const body = Buffer.concat([
  Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="upload.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`),
  file,
  Buffer.from(`\r\n--${boundary}--\r\n`),
])
const result = await autocannon({
  url: `http://127.0.0.1:${port}/upload`,
  connections,
  duration: ms / 1000,
  method: 'POST',
  headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  body,
})
const { latency } = result
console.log(JSON.stringify({
  requests: result.requests.average,
  answered: result['2xx'],
  p50: latency.p50,
  p90: latency.p90,
  p99: latency.p99,
  errors: result.errors + result.non2xx,
}))
