// Limits a read meets: too few file descriptors, a result past maxLength, and sources
// of unknown size (/dev/zero, an endless FIFO) past maxUnsizedLength. Each ends with
// node:fs's error, and nothing leaks.
import test from 'ava'
import fs from 'node:fs'
import { constants } from 'node:buffer'
import { execFile, execFileSync, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import net from 'node:net'
import { fairfs, isNative, nativeOnly, makeFile, tmpPath, posixOnly, noUlimit, windows } from './helpers.mjs'

const child = fileURLToPath(new URL('./fixtures/child.mjs', import.meta.url))

let pipes = 0
/**
 * A source of zeros without end, of unknown size: /dev/zero, or on Windows, which has
 * none, a named pipe whose server writes zeros to each reader until it goes.
 */
async function endlessZeros(t) {
  if (!windows) return '/dev/zero'
  const name = `\\\\.\\pipe\\fairfs-zeros-${process.pid}-${pipes++}`
  const zeros = Buffer.alloc(1024 * 1024)
  const server = net.createServer((socket) => {
    socket.on('error', () => {}) // the reader closes mid-write
    const pump = () => {
      while (socket.write(zeros));
    }
    socket.on('drain', pump)
    pump()
  })
  await new Promise((resolve) => server.listen(name, resolve))
  t.teardown(() => server.close())
  return name
}

posixOnly(noUlimit, test)('EMFILE under a low fd limit: requests fail cleanly, leak nothing, and work again', async (t) => {
  const { path, data } = makeFile(200_000)
  const out = await new Promise((resolve, reject) =>
    execFile('sh', ['-c', `ulimit -n 64 && exec "${process.execPath}" "${child}" emfile "${path}"`], (err, stdout, stderr) =>
      err ? reject(new Error(stderr)) : resolve(JSON.parse(stdout)),
    ),
  )
  t.true(out.codes.ok > 0)
  t.deepEqual(Object.keys(out.codes).filter((k) => k !== 'ok' && k !== 'EMFILE'), [], JSON.stringify(out.codes))
  // The native backend admits only as many reads as it has descriptors for.
  if (isNative) t.deepEqual(out.codes, { ok: 300 })
  t.is(out.fdsAfter, out.fdsBefore, 'no fd leaked')
  t.is(out.afterLength, data.length)
})

nativeOnly(test.serial)('/dev/zero and an endless FIFO stop at the configured cap with ERR_FS_FILE_TOO_LARGE', async (t) => {
  fairfs.configure({ maxLength: 8 * 1024 * 1024 })
  t.teardown(() => fairfs.configure({ maxLength: constants.MAX_LENGTH }))
  const zero = await fairfs.readFile(await endlessZeros(t)).catch((e) => e)
  t.is(zero.code, 'ERR_FS_FILE_TOO_LARGE')
  t.true(zero instanceof RangeError)
  // Windows has no FIFOs: its endless source above is a pipe already.
  if (!windows) {
    const fifo = tmpPath('endless')
    execFileSync('mkfifo', [fifo])
    const writer = spawn('sh', ['-c', `exec cat /dev/zero > "${fifo}"`], { stdio: 'ignore' })
    const exited = new Promise((resolve) => writer.on('exit', resolve))
    const endless = await fairfs.readFile(fifo).catch((e) => e)
    writer.kill()
    await exited
    t.is(endless.code, 'ERR_FS_FILE_TOO_LARGE')
  }
  const { path } = makeFile(9 * 1024 * 1024)
  t.is((await fairfs.readFile(path).catch((e) => e)).code, 'ERR_FS_FILE_TOO_LARGE', 'regular files too')
})

nativeOnly(test.serial)('a source of unknown size stops at maxUnsizedLength; regular files do not', async (t) => {
  t.is(fairfs.stats().maxUnsizedLength, 2 ** 31 - 1, 'the default, whatever buffer.constants.MAX_LENGTH is')
  t.throws(() => fairfs.configure({ maxUnsizedLength: -1 }), { code: 'ERR_OUT_OF_RANGE' })
  fairfs.configure({ maxUnsizedLength: 4 * 1024 * 1024 })
  t.teardown(() => fairfs.configure({ maxUnsizedLength: 2 ** 31 - 1 }))
  const err = await fairfs.readFile(await endlessZeros(t)).catch((e) => e)
  t.is(err.code, 'ERR_FS_FILE_TOO_LARGE')
  t.is(err.message, `File size (${4 * 1024 * 1024 + 1}) is greater than ${4 * 1024 * 1024} bytes`)
  const { path, data } = makeFile(5 * 1024 * 1024)
  t.true((await fairfs.readFile(path)).equals(data), 'a regular file over the bound reads in full')
})

nativeOnly(test)('/dev/zero stops at 2 GiB by default, on every Node line, with memory near that bound', async (t) => {
  const zeros = await endlessZeros(t)
  const script = `
    const fairfs = require(${JSON.stringify(fileURLToPath(new URL('../index.js', import.meta.url)))})
    fairfs.readFile(${JSON.stringify(zeros)}).then(
      () => console.log(JSON.stringify({ read: true })),
      (e) => console.log(JSON.stringify({ code: e.code, message: e.message, maxRssMiB: process.resourceUsage().maxRSS / 1024 })),
    )`
  const out = await new Promise((resolve, reject) =>
    execFile(process.execPath, ['-e', script], { timeout: 120_000 }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout)))),
  )
  t.is(out.code, 'ERR_FS_FILE_TOO_LARGE')
  t.is(out.message, `File size (${2 ** 31}) is greater than 2 GiB`)
  t.true(out.maxRssMiB < 2048 + 512, `peak RSS ${Math.round(out.maxRssMiB)} MiB`)
})
