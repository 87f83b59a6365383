// readFiles: many files in one call, results in order, with a settle mode.
import test from 'ava'
import fs from 'node:fs'
import { pathToFileURL } from 'node:url'
import { fairfs, nativeOnly, makeFile, tmpPath, describeError } from './helpers.mjs'

const files = Array.from({ length: 300 }, (_, i) => makeFile(i * 997))

test('results come in order and match fs.promises.readFile', async (t) => {
  const paths = files.map((f) => f.path)
  const ours = await fairfs.readFiles(paths)
  const node = await Promise.all(paths.map((p) => fs.promises.readFile(p)))
  t.is(ours.length, node.length)
  t.true(ours.every((b, i) => Buffer.isBuffer(b) && b.equals(node[i])))
})

test('encoding, URLs, Buffers and iterables are accepted', async (t) => {
  const some = files.slice(0, 5)
  const paths = new Set([some[0].path, pathToFileURL(some[1].path), Buffer.from(some[2].path), some[3].path, some[4].path])
  const ours = await fairfs.readFiles(paths, 'base64')
  t.deepEqual(ours, some.map((f) => f.data.toString('base64')))
  t.deepEqual(await fairfs.readFiles([]), [])
})

test('without settle, the first error rejects like Promise.all', async (t) => {
  const missing = tmpPath('missing')
  const ours = await fairfs.readFiles([files[0].path, missing, files[1].path]).catch((e) => e)
  const node = await Promise.all([files[0].path, missing, files[1].path].map((p) => fs.promises.readFile(p))).catch((e) => e)
  t.deepEqual(describeError(ours), describeError(node))
})

test('settle: true reports each file like Promise.allSettled', async (t) => {
  const paths = [files[3].path, tmpPath('missing'), '\u0000bad', fs.mkdtempSync(tmpPath('dir')), files[4].path]
  const ours = await fairfs.readFiles(paths, { settle: true, encoding: 'hex' })
  const node = await Promise.allSettled(paths.map((p) => fs.promises.readFile(p, 'hex')))
  t.deepEqual(
    ours.map((r) => (r.status === 'fulfilled' ? r : { status: r.status, reason: describeError(r.reason) })),
    node.map((r) => (r.status === 'fulfilled' ? r : { status: r.status, reason: describeError(r.reason) })),
  )
  t.deepEqual(ours.map((r) => r.status), ['fulfilled', 'rejected', 'rejected', 'rejected', 'fulfilled'])
})

test('bad arguments reject with node-style errors', async (t) => {
  for (const paths of [undefined, 5, 'a-string', {}]) {
    const err = await fairfs.readFiles(paths).catch((e) => e)
    t.is(err.code, 'ERR_INVALID_ARG_TYPE')
  }
  const err = await fairfs.readFiles([files[0].path], { encoding: 'nope' }).catch((e) => e)
  t.is(err.code, 'ERR_INVALID_ARG_VALUE')
})

test('an abort rejects the batch with AbortError', async (t) => {
  const controller = new AbortController()
  const p = fairfs.readFiles(files.map((f) => f.path), { signal: controller.signal })
  controller.abort('enough')
  const err = await p.catch((e) => e)
  t.is(err.name, 'AbortError')
  t.is(err.cause, 'enough')
})

nativeOnly(test)('small results share slabs yet stay intact while their neighbours are collected and slabs reused', async (t) => {
  const small = Array.from({ length: 400 }, (_, i) => makeFile(1 + ((i * 131) % 3000)))
  const paths = small.map((f) => f.path)
  const first = await fairfs.readFiles(paths)
  t.true(first.some((b, i) => i > 0 && b.buffer === first[0].buffer), 'small results are views of one slab')
  // Writing into one result never shows in another.
  first[1].fill(0xff)
  t.true(first[2].equals(small[2].data))
  const kept = first.filter((_, i) => i % 10 === 3)
  first.length = 0
  for (let round = 0; round < 5; round++) {
    globalThis.gc()
    await new Promise((resolve) => setImmediate(resolve))
    const again = await fairfs.readFiles(paths)
    t.true(again.every((b, i) => b.equals(small[i].data)))
  }
  t.true(kept.every((b, j) => b.equals(small[j * 10 + 3].data)))
})
