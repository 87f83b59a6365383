// The server benchmark's framework side: fastify with @fastify/static (which reads
// through @fastify/send, fs.stat and fs.createReadStream), serving a directory.
//   node benches/js/server/fastify-server.mjs <dir>
//   node --import fairfs/register benches/js/server/fastify-server.mjs <dir>
// Listens on an ephemeral port and sends it to the parent over IPC.
import path from 'node:path'
import Fastify from 'fastify'
import fastifyStatic from '@fastify/static'

const root = path.resolve(process.argv[2] ?? '.')
const app = Fastify({ logger: false })
await app.register(fastifyStatic, { root, etag: false, lastModified: false, cacheControl: false })
const address = await app.listen({ host: '127.0.0.1', port: 0 })
process.send?.({ port: Number(new URL(address).port) })
if (!process.send) console.log(`serving ${root} on ${address}`)
