// Files that change during a read: shrink, grow, are deleted or replaced. The result
// is what node:fs gives, or a state the file really had, never a mix.
import test from 'ava'
import fs from 'node:fs'
import crypto from 'node:crypto'
import { fairfs, isNative, makeFile, windows } from './helpers.mjs'

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

test('a file deleted during the read is read in full (the fd keeps it)', async (t) => {
  const { path, data } = makeFile(16 * 1024 * 1024)
  const read = fairfs.readFile(path)
  setImmediate(() => fs.unlinkSync(path))
  t.true((await read).equals(data))
})

test('a file replaced during the read gives the old or the new content, never a mix', async (t) => {
  const { path, data } = makeFile(8 * 1024 * 1024)
  const { path: other, data: otherData } = makeFile(8 * 1024 * 1024)
  const read = fairfs.readFile(path)
  let refused = null
  setImmediate(() => {
    try {
      fs.renameSync(other, path)
    } catch (e) {
      refused = e
    }
  })
  const got = await read
  if (refused) {
    // Windows refuses to replace a file while it is open (EPERM): the read is of the old one.
    t.true(windows && refused.code === 'EPERM', refused.message)
    t.true(got.equals(data))
  } else {
    t.true(got.equals(data) || got.equals(otherData))
  }
})
