// install() routes node:fs through fairfs; uninstall() restores it exactly.
import test from 'ava'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
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

// fairfs's own long-lived descriptors (the mount table it watches) live above the
// numbers an application's files take: after fairfs has read, stat'ed, written and
// watched the mounts, `open` returns the number it returns under node:fs (tar's tests
// name test points after them). Linux, where /proc shows when install()'s own
// FileHandle (opened to learn FileHandle's prototype) is closed again: until then it
// holds a number, as any library's open file would (and on a busy machine it may open
// only after the first look, which the wait allows for).
const onLinux = process.platform === 'linux' ? test : (title, fn) => test.skip(`${title} [reads /proc/self/fd: Linux only]`, fn)
onLinux('open returns the fd numbers node:fs returns, after fairfs has done its own work', (t) => {
  const index = fileURLToPath(new URL('../index.js', import.meta.url))
  const scratch = tmpPath('fd-numbers')
  const code = `const fs = require('fs')
    if (process.argv[1] === 'ours') require(${JSON.stringify(index)}).install()
    const installsOwn = () => fs.readdirSync('/proc/self/fd').some((fd) => {
      try { return fs.readlinkSync('/proc/self/fd/' + fd).endsWith('install.js') } catch { return false }
    })
    ;(async () => {
      // install()'s own FileHandle: once seen open, until it is closed; if not seen
      // within 5 s, it came and went before the first look (2 s was too short for a
      // busy CI machine: the handle was still open for the measured opens).
      let seen = false
      for (let i = 0; process.argv[1] === 'ours' && i < 400; i++) {
        if (installsOwn()) seen = true
        else if (seen || i >= 200) break
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      await fs.promises.readFile(${JSON.stringify(index)})
      await fs.promises.stat(${JSON.stringify(index)})
      await fs.promises.writeFile(${JSON.stringify(scratch)}, 'x')
      const fds = [fs.openSync(${JSON.stringify(index)}, 'r')]
      fds.push(await new Promise((resolve, reject) => fs.open(${JSON.stringify(index)}, 'r', (e, fd) => (e ? reject(e) : resolve(fd)))))
      console.log(JSON.stringify(fds))
    })()`
  const numbers = (side) => {
    const r = spawnSync(process.execPath, ['-e', code, side], { encoding: 'utf8', timeout: 60_000 })
    t.is(r.status, 0, r.stderr)
    return JSON.parse(r.stdout)
  }
  t.deepEqual(numbers('ours'), numbers('node'))
})
