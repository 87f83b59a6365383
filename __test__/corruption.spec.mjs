// Pooled memory is lent to JS and reused after GC. A Buffer that is still alive
// must never see its bytes change: read many files and streams, keep half the
// results, collect the rest, read more into the recycled memory, and check that
// every kept Buffer is intact.
import test from 'ava'
import crypto from 'node:crypto'
import { setImmediate as nextLoopTurn } from 'node:timers/promises'
import { fairfs, nativeOnly, makeFile } from './helpers.mjs'

const digest = (b) => crypto.createHash('sha256').update(b).digest('hex')

function readStream(path, highWaterMark) {
  return new Promise((resolve, reject) => {
    const chunks = []
    fairfs
      .createReadStream(path, { highWaterMark })
      .on('data', (c) => chunks.push(c))
      .on('error', reject)
      .on('end', () => resolve(chunks))
  })
}

nativeOnly(test.serial)('kept Buffers stay intact while collected ones are recycled', async (t) => {
  t.is(typeof globalThis.gc, 'function', 'run with --expose-gc')
  // One file in ten is over 1 MiB, so its result is pooled memory lent to JS (smaller
  // results are copies), which must come back only once its Buffer is collected.
  const files = Array.from({ length: 240 }, (_, i) => makeFile((i % 10 === 0 ? 1024 * 1024 : 4096) + ((i * 7919) % 200_000)))
  const kept = []
  const hitsBefore = fairfs.stats().pool.hits
  for (let round = 0; round < 6; round++) {
    const results = await Promise.all(
      files.map(async ({ path, data }, i) => {
        if (i % 3 === 0) return { parts: await readStream(path, 16 * 1024), expected: digest(data) }
        return { parts: [await fairfs.readFile(path)], expected: digest(data) }
      }),
    )
    for (const [i, r] of results.entries()) {
      t.is(digest(Buffer.concat(r.parts)), r.expected, `round ${round} file ${i} read wrong`)
      if (i % 2 === 0) kept.push({ parts: r.parts, expected: r.expected })
    }
    results.length = 0
    globalThis.gc()
    await nextLoopTurn() // finalizers run a loop turn after GC
    await nextLoopTurn()
    for (const k of kept) {
      if (digest(Buffer.concat(k.parts)) !== k.expected) t.fail(`a kept Buffer changed after round ${round}`)
    }
  }
  t.true(fairfs.stats().pool.hits > hitsBefore, 'recycled memory was actually reused')
  t.pass(`${kept.length} kept results intact`)
})
