// The upload benchmark's server: express 5 with multer 2's disk storage, taking one
// file per request (POST /upload, field "file") into a directory, as an upload endpoint
// does: multer pipes each part into fs.createWriteStream and answers on its 'finish'.
//   node benches/js/server/upload-server.mjs <dir>
//   node --import fairfs/register benches/js/server/upload-server.mjs <dir>
// Listens on an ephemeral port and sends it to the parent over IPC.
import crypto from 'node:crypto'
import path from 'node:path'
import express from 'express'
import multer from 'multer'

const dest = path.resolve(process.argv[2] ?? '.')
// multer names a file with crypto.randomBytes(16, callback), a trip through libuv's
// pool; FAIRFS_BENCH_NAMES=uuid names it with crypto.randomUUID() instead, which does not.
const filename = process.env.FAIRFS_BENCH_NAMES === 'uuid' ? (req, file, cb) => cb(null, crypto.randomUUID()) : undefined
// FAIRFS_BENCH_STORAGE=memory keeps uploads in memory: no file system at all, the
// endpoint's ceiling beside the hashes.
const storage = process.env.FAIRFS_BENCH_STORAGE === 'memory' ? multer.memoryStorage() : multer.diskStorage({ destination: dest, filename })
// FAIRFS_BENCH_WRITE_BEHIND=1 (with fairfs/register): configure({ writeBehind: true }).
if (process.env.FAIRFS_BENCH_WRITE_BEHIND === '1') (await import('fairfs')).default.configure({ writeBehind: true })
const upload = multer({ storage })
const app = express()
app.post('/upload', upload.single('file'), (req, res) => {
  res.end(req.file ? String(req.file.size) : 'none')
})
const server = app.listen(0, '127.0.0.1', () => {
  const { port } = server.address()
  process.send?.({ port })
  if (!process.send) console.log(`taking uploads into ${dest} on http://127.0.0.1:${port}/upload`)
})
