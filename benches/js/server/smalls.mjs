// A load generator of the server benchmark, in a process of its own: autocannon asks
// for 100 different 1 KiB files over `connections` connections for `ms`, then prints
// {requests, p50, p90, p99, errors} as JSON (latencies in ms).
//   node smalls.mjs <port> <connections> <ms>
import autocannon from 'autocannon'

const [port, connections, ms] = process.argv.slice(2).map(Number)
const result = await autocannon({
  url: `http://127.0.0.1:${port}`,
  connections,
  duration: ms / 1000,
  requests: Array.from({ length: 100 }, (_, i) => ({ path: `/small-${i}.txt` })),
})
const { latency } = result
console.log(JSON.stringify({
  requests: result.requests.average,
  p50: latency.p50,
  p90: latency.p90,
  p99: latency.p99,
  errors: result.errors + result.non2xx,
}))
