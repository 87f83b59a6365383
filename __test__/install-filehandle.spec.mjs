// install() also covers a FileHandle's readFile() and createReadStream(), and ESM
// named imports of node:fs/promises; uninstall() restores all of it exactly.
import test from 'ava'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import { execFileSync, spawnSync } from 'node:child_process'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { fairfs, nativeOnly, makeFile, describeError, posixOnly, callerFds } from './helpers.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))

/** The FileHandle methods as node:fs has them, from a handle opened before any install(). */
async function handleMethods() {
  const handle = await fsp.open(fileURLToPath(import.meta.url))
  const proto = Object.getPrototypeOf(handle)
  await handle.close()
  return { proto, readFile: proto.readFile, createReadStream: proto.createReadStream, close: proto.close }
}

posixOnly(callerFds, nativeOnly(test.serial))('filehandle.readFile() reads through fairfs, from the current position, with node:fs results', async (t) => {
  const { path, data } = makeFile(3 * 1024 * 1024 + 17)
  const expected = {}
  for (const encoding of [undefined, 'hex']) {
    const h = await fsp.open(path)
    await h.read(Buffer.alloc(1000), 0, 1000, null)
    expected[encoding] = await h.readFile(encoding)
    await h.close()
  }
  fairfs.install()
  t.teardown(() => fairfs.uninstall())
  for (const encoding of [undefined, 'hex']) {
    const h = await fsp.open(path)
    await h.read(Buffer.alloc(1000), 0, 1000, null)
    const before = fairfs.stats().completed
    const got = await h.readFile(encoding)
    t.is(fairfs.stats().completed, before + 1, 'the read went through fairfs')
    t.deepEqual(got, expected[encoding])
    await h.close()
  }
  t.true(expected[undefined].equals(data.subarray(1000)))
})

nativeOnly(test.serial)('filehandle.readFile() on a closed handle fails as node:fs does', async (t) => {
  const { path } = makeFile(10)
  const h = await fsp.open(path)
  await h.close()
  const node = describeError(await h.readFile().catch((e) => e))
  fairfs.install()
  t.teardown(() => fairfs.uninstall())
  const ours = describeError(await h.readFile().catch((e) => e))
  t.deepEqual(ours, node)
  t.is(ours.code, 'EBADF')
})

nativeOnly(test.serial)('close() waits for a fairfs readFile in flight on the handle', async (t) => {
  const { path, data } = makeFile(64 * 1024 * 1024)
  fairfs.install()
  t.teardown(() => fairfs.uninstall())
  const h = await fsp.open(path)
  const read = h.readFile()
  const closed = h.close()
  const [got] = await Promise.all([read, closed])
  t.true(got.equals(data), 'the whole file, not EBADF or another file reusing the fd')
  t.is(h.fd, -1)
})

posixOnly(callerFds, nativeOnly(test.serial))('filehandle.createReadStream() streams through fairfs', async (t) => {
  const { path, data } = makeFile(300_000)
  fairfs.install()
  t.teardown(() => fairfs.uninstall())
  const h = await fsp.open(path)
  const stream = h.createReadStream()
  t.true(stream instanceof fairfs.ReadStream)
  const chunks = []
  for await (const chunk of stream) chunks.push(chunk)
  t.true(Buffer.concat(chunks).equals(data))
})

nativeOnly(test.serial)('filehandle.createReadStream() with an fs option throws as node:fs does', async (t) => {
  const { path } = makeFile(10)
  const h0 = await fsp.open(path)
  const node = describeError((() => { try { h0.createReadStream({ fs: {} }) } catch (e) { return e } })())
  await h0.close()
  fairfs.install()
  t.teardown(() => fairfs.uninstall())
  const h2 = await fsp.open(path)
  t.teardown(() => h2.close())
  const ours = describeError((() => { try { h2.createReadStream({ fs: {} }) } catch (e) { return e } })())
  t.deepEqual(ours, node)
  t.is(ours.code, 'ERR_METHOD_NOT_IMPLEMENTED')
})

nativeOnly(test.serial)('uninstall() restores FileHandle and fs.promises.open exactly', async (t) => {
  const before = await handleMethods()
  const open = fs.promises.open
  fairfs.install()
  const h = await fsp.open(fileURLToPath(import.meta.url))
  await h.close()
  t.not(before.proto.readFile, before.readFile, 'patched while installed')
  t.not(before.proto.createReadStream, before.createReadStream)
  fairfs.uninstall()
  t.is(fs.promises.open, open)
  t.is(before.proto.readFile, before.readFile)
  t.is(before.proto.createReadStream, before.createReadStream)
  t.is(before.proto.close, before.close)
})

nativeOnly(test)('ESM named imports of node:fs and node:fs/promises follow install() and uninstall()', (t) => {
  const script = `
    import { readFile } from 'node:fs/promises'
    import { readFile as readFileCb, createReadStream } from 'node:fs'
    import fairfs from ${JSON.stringify(pathToFileURL(root + 'index.mjs').href)}
    const before = [readFile, readFileCb, createReadStream]
    fairfs.install()
    const during = [readFile === fairfs.promises.readFile, readFileCb !== before[1], createReadStream === fairfs.createReadStream]
    fairfs.uninstall()
    const after = [readFile === before[0], readFileCb === before[1], createReadStream === before[2]]
    console.log(JSON.stringify({ during, after }))`
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, FAIRFS_BACKEND: 'native' } })
  t.deepEqual(JSON.parse(out), { during: [true, true, true], after: [true, true, true] })
})

// `handle.stat.call({})` and the like: node:fs's own ERR_INTERNAL_ASSERTION, and, in a
// fresh process where that is the first call, real handles still work after it (a
// receiver that is no FileHandle once made fairfs learn no reference counting at all).
nativeOnly(test)('FileHandle methods called on something that is not a FileHandle fail as node:fs\'s, and handles work after', async (t) => {
  const register = fileURLToPath(new URL('../register.js', import.meta.url))
  const code = `const fs = require('fs')
    ;(async () => {
      const h = await fs.promises.open(${JSON.stringify(register)})
      for (const m of ['stat', 'readFile', 'writeFile', 'appendFile']) {
        try { await h[m].call({}, 'x'); console.log(m, 'ok') } catch (e) { console.log(m, e.code, e.message) }
      }
      console.log((await h.stat()).size, (await h.readFile()).length)
      await h.close()
    })()`
  const run = (args) => spawnSync(process.execPath, [...args, '-e', code], { encoding: 'utf8', timeout: 60_000 })
  const [node, ours] = [run([]), run(['-r', register])]
  t.is(ours.status, 0, ours.stderr)
  t.regex(node.stdout, /^stat ERR_INTERNAL_ASSERTION/)
  t.is(ours.stdout, node.stdout)
})
