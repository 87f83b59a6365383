// install() routes node:fs through fairfs; uninstall() restores it exactly.
import test from 'ava'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import { fairfs, isNative, nativeOnly, makeFile, tmpPath, viaCallback, viaPromise } from './helpers.mjs'

const original = { readFile: fs.readFile, promisesReadFile: fs.promises.readFile, createReadStream: fs.createReadStream }

const installs = isNative ? 'install patches fs.readFile, fs/promises and createReadStream, idempotently' : 'install() patches nothing on the node backend (node:fs is what runs)'
test.serial(installs, async (t) => {
  t.teardown(() => fairfs.uninstall())
  fairfs.install()
  if (!isNative) {
    t.is(fs.readFile, original.readFile)
    t.is(fs.promises.readFile, original.promisesReadFile)
    t.is(fs.createReadStream, original.createReadStream)
    t.false(fairfs.isInstalled())
    return
  }
  const patched = { readFile: fs.readFile, promisesReadFile: fs.promises.readFile, createReadStream: fs.createReadStream }
  fairfs.install()
  t.is(fs.readFile, patched.readFile, 'second install changes nothing')
  t.not(fs.readFile, original.readFile)
  t.is(fsp.readFile, fs.promises.readFile, 'node:fs/promises is the same object')

  const { path, data } = makeFile(200_000)
  const before = fairfs.stats().completed
  const viaCb = await new Promise((resolve, reject) => fs.readFile(path, (e, d) => (e ? reject(e) : resolve(d))))
  const viaPromises = await fsp.readFile(path)
  const chunks = []
  await new Promise((resolve) => fs.createReadStream(path).on('data', (c) => chunks.push(c)).on('close', resolve))
  t.true(viaCb.equals(data) && viaPromises.equals(data) && Buffer.concat(chunks).equals(data))
  t.true(fairfs.stats().completed >= before + 3, 'the reads went through fairfs')
})

nativeOnly(test.serial)('patched functions match the originals on results and errors', async (t) => {
  const { path } = makeFile(70_000)
  const cases = [[path], [path, 'utf8'], [path, { encoding: 'hex' }], [tmpPath('missing')], [{}], [path, 5], [tmpPath('x'), { flag: 'zz' }]]
  const expected = []
  for (const args of cases) {
    expected.push([await viaCallback((cb) => fs.readFile(...args, cb)), await viaPromise(() => fsp.readFile(...args))])
  }
  fairfs.install()
  t.teardown(() => fairfs.uninstall())
  for (const [i, args] of cases.entries()) {
    t.deepEqual(await viaCallback((cb) => fs.readFile(...args, cb)), expected[i][0], `callback ${i}`)
    t.deepEqual(await viaPromise(() => fsp.readFile(...args)), expected[i][1], `promise ${i}`)
  }
  // Like node:fs, the patched callback form requires a callback.
  t.throws(() => fs.readFile(path), { code: 'ERR_INVALID_ARG_TYPE' })
})

test.serial('uninstall restores exactly the original functions', (t) => {
  fairfs.install()
  fairfs.uninstall()
  fairfs.uninstall()
  t.is(fs.readFile, original.readFile)
  t.is(fs.promises.readFile, original.promisesReadFile)
  t.is(fs.createReadStream, original.createReadStream)
  t.false(fairfs.isInstalled())
})

test('fairfs streams are instanceof fs.ReadStream', (t) => {
  const s = fairfs.createReadStream(makeFile(10).path)
  t.true(s instanceof fs.ReadStream)
  s.destroy()
})
