// The server benchmark's koa side: koa 3 with koa-static (which reads through koa-send:
// fs.access and fs.stat, captured when it loads, then fs.createReadStream), serving a
// directory. koa-send keeps its own fs.stat, so fairfs/register must load first.
//   node benches/js/server/koa-server.mjs <dir>
//   node --import fairfs/register benches/js/server/koa-server.mjs <dir>
// Listens on an ephemeral port and sends it to the parent over IPC.
import path from 'node:path'
import Koa from 'koa'
import koaStatic from 'koa-static'

const root = path.resolve(process.argv[2] ?? '.')
const app = new Koa()
app.use(koaStatic(root))
const server = app.listen(0, '127.0.0.1', () => {
  const { port } = server.address()
  process.send?.({ port })
  if (!process.send) console.log(`serving ${root} on http://127.0.0.1:${port}`)
})
