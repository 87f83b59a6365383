// Files that change or never end, FIFOs, and many reads at once.
import test from 'ava'
import fs from 'node:fs'
import { spawn, execFileSync } from 'node:child_process'
import crypto from 'node:crypto'
import { fairfs, isNative, makeFile, tmpPath } from './helpers.mjs'

test('a FIFO with a writer is read to EOF', async (t) => {
  const fifo = tmpPath('fifo')
  execFileSync('mkfifo', [fifo])
  const { path: source, data } = makeFile(300_000)
  // The read blocks in open() until the writer opens the FIFO: on a pool thread,
  // never on the event loop.
  const read = fairfs.readFile(fifo)
  const writer = spawn('sh', ['-c', `sleep 0.1; cat "${source}" > "${fifo}"`])
  const [got] = await Promise.all([read, new Promise((resolve) => writer.on('exit', resolve))])
  t.true(got.equals(data))
})

// Serial: configure() is process-wide, and concurrent tests would read with its chunk size.
test.serial('a file that shrinks during the read gives a prefix of the old content', async (t) => {
  const { path, data } = makeFile(32 * 1024 * 1024)
  fairfs.configure({ chunkSize: 64 * 1024 })
  t.teardown(() => fairfs.configure({ chunkSize: 512 * 1024 }))
  const read = fairfs.readFile(path)
  setImmediate(() => fs.truncateSync(path, 1024 * 1024))
  const got = await read
  t.true(got.length >= 1024 * 1024 && got.length <= data.length, `length ${got.length}`)
  t.true(got.equals(data.subarray(0, got.length)))
})

// node:fs takes the size from an fstat a loop turn after open, so the append may come first.
const grows = isNative ? 'a file that grows during the read is cut at its size when the read started' : 'a file that grows during the read is cut at its size at fstat, as in node:fs (node backend)'
test(grows, async (t) => {
  const { path, data } = makeFile(32 * 1024 * 1024)
  const read = fairfs.readFile(path)
  const more = crypto.randomBytes(1024 * 1024)
  setImmediate(() => fs.appendFileSync(path, more))
  const got = await read
  if (isNative) t.true(got.equals(data))
  else t.true(got.equals(data) || got.equals(Buffer.concat([data, more])))
})

test('2,000 concurrent mixed reads are all byte-correct', async (t) => {
  const sizes = [0, 1, 100, 4096, 65_536, 300_000, 1_048_577, 3_000_000]
  const files = sizes.map((n) => makeFile(n))
  const jobs = []
  for (let i = 0; i < 2000; i++) {
    const { path, data } = files[i % files.length]
    const kind = i % 4
    if (kind === 0) jobs.push(fairfs.readFile(path).then((got) => got.equals(data)))
    else if (kind === 1) jobs.push(fairfs.promises.readFile(path, 'latin1').then((got) => got === data.toString('latin1')))
    else if (kind === 2) jobs.push(new Promise((resolve) => fairfs.readFile(path, (e, got) => resolve(!e && got.equals(data)))))
    else jobs.push(fairfs.readFile(path, { encoding: 'base64' }).then((got) => got === data.toString('base64')))
  }
  const ok = await Promise.all(jobs)
  t.is(ok.filter(Boolean).length, 2000)
})
