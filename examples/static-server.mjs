// A small static file server built on fs.readFile and fs.createReadStream, the way
// existing apps are. Run it as is (node:fs), or with fairfs patched in:
//   node examples/static-server.mjs <dir> [port]
//   node --import fairfs/register examples/static-server.mjs <dir> [port]
// Big files (> 1 MiB) are streamed; small ones are read whole.
import http from 'node:http'
import fs from 'node:fs'
import path from 'node:path'

const root = path.resolve(process.argv[2] ?? '.')
const port = Number(process.argv[3] ?? 8080)

const server = http.createServer((req, res) => {
  const file = path.join(root, path.normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)))
  if (!file.startsWith(root)) {
    res.writeHead(403).end()
    return
  }
  fs.stat(file, (err, st) => {
    if (err || !st.isFile()) {
      res.writeHead(404).end()
      return
    }
    res.setHeader('content-length', st.size)
    if (st.size > 1024 * 1024) {
      fs.createReadStream(file)
        .on('error', () => res.destroy())
        .pipe(res)
    } else {
      fs.readFile(file, (err, data) => (err ? res.writeHead(500).end() : res.end(data)))
    }
  })
})

server.listen(port, '127.0.0.1', () => {
  const address = server.address()
  process.send?.({ port: address.port })
  if (!process.send) console.log(`serving ${root} on http://127.0.0.1:${address.port}`)
})
