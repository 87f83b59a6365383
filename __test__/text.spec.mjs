// Text results: latin1 files, and utf-8/ascii files that are all ASCII, arrive from
// the native side as strings (external strings over pooled memory from 1 MiB on),
// so JS decodes nothing. Every result must equal node:fs's, whichever path it took.
import test from 'ava'
import fs from 'node:fs'
import { fairfs, nativeOnly, needsRss, tmpPath, bothPromise, bothCallback } from './helpers.mjs'
import { settleOutstanding } from './fixtures/settle.mjs'

/** A file of `len` bytes cycling through `alphabet`, with a different start per 4 KiB. */
function textFile(len, alphabet) {
  const data = Buffer.alloc(len)
  for (let i = 0; i < len; i++) data[i] = alphabet[(i + (i >> 12)) % alphabet.length]
  const path = tmpPath('text')
  fs.writeFileSync(path, data)
  return { path, data }
}

const ascii = Buffer.from('The quick brown fox jumps over the lazy dog.\n0123456789')
const high = Buffer.from([0x41, 0xe9, 0xff, 0x80, 0x0a, 0xc3, 0xa9]) // latin1 bytes, and a utf-8 'é'

for (const len of [0, 100, 70_000, 1024 * 1024, 3 * 1024 * 1024 + 7]) {
  for (const [kind, alphabet] of [['ASCII', ascii], ['non-ASCII', high]]) {
    for (const encoding of ['utf8', 'utf-8', 'latin1', 'binary', 'ascii', 'UTF8', 'hex']) {
      test(`${len} bytes of ${kind} text as ${encoding}: same string as node:fs`, async (t) => {
        const { path } = textFile(len, alphabet)
        const { ours, node } = await bothPromise(path, encoding)
        t.is(typeof ours.value, 'string')
        t.true(ours.value === node.value, 'the strings differ')
        const callback = await bothCallback(path, { encoding })
        t.true(callback.ours.value === callback.node.value, 'the strings differ (callback)')
      })
    }
  }
}

nativeOnly(test.serial)('a big text result holds pooled memory until V8 collects the string', async (t) => {
  const { path, data } = textFile(4 * 1024 * 1024, ascii)
  await settleOutstanding(fairfs, 0)
  const before = fairfs.stats().pool.outstanding
  let text = await fairfs.readFile(path, 'utf8')
  t.is(text, data.toString('latin1'))
  t.true(fairfs.stats().pool.outstanding > before, 'the string is external: its bytes are still lent')
  text = null
  await settleOutstanding(fairfs, before)
  t.is(fairfs.stats().pool.outstanding, before, 'collected: the bytes are back in the pool')
})

test.serial('an abort during a text read gives AbortError, as for Buffers', async (t) => {
  const { path } = textFile(8 * 1024 * 1024, ascii)
  const controller = new AbortController()
  const p = fairfs.readFile(path, { encoding: 'utf8', signal: controller.signal })
  controller.abort()
  const err = await p.catch((e) => e)
  t.is(err.name, 'AbortError')
})

needsRss(nativeOnly(test.serial))('a loop of big text reads keeps memory bounded (V8 is told about external strings)', async (t) => {
  const { path } = textFile(4 * 1024 * 1024, ascii)
  const before = process.memoryUsage().rss
  t.true(before > 0, 'RSS is measurable here')
  let most = before
  for (let i = 0; i < 300; i++) {
    const text = await fairfs.readFile(path, 'latin1')
    t.is(text.length, 4 * 1024 * 1024)
    most = Math.max(most, process.memoryUsage().rss)
  }
  // 1.2 GB of strings went through; unaccounted, nearly all of it stayed resident.
  t.true(most - before < 400 * 1024 * 1024, `RSS grew by ${((most - before) / 2 ** 20).toFixed(0)} MiB`)
  t.log(`RSS grew by at most ${((most - before) / 2 ** 20).toFixed(0)} MiB`)
})
