// The server benchmark's express side: express 5 with serve-static (which reads through
// send: fs.stat, then fs.createReadStream), serving a directory.
//   node benches/js/server/express-server.mjs <dir>
//   node --import fairfs/register benches/js/server/express-server.mjs <dir>
// Listens on an ephemeral port and sends it to the parent over IPC.
import path from 'node:path'
import express from 'express'
import serveStatic from 'serve-static'

const root = path.resolve(process.argv[2] ?? '.')
const app = express()
app.use(serveStatic(root, { etag: false, lastModified: false, cacheControl: false }))
const server = app.listen(0, '127.0.0.1', () => {
  const { port } = server.address()
  process.send?.({ port })
  if (!process.send) console.log(`serving ${root} on http://127.0.0.1:${port}`)
})
