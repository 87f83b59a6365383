'use strict'
// A load-and-read check for runtimes ava does not run on (Bun's musl build, in
// scripts/test-musl.sh): every call is made on fairfs and on the runtime's own node:fs,
// and the outcomes (bytes, strings, chunk lists, or the error's fields) must match.
// Fails unless the native backend loaded. Prints the number of checks.
//
//   <runtime> scripts/smoke.cjs
const assert = require('node:assert')
const crypto = require('node:crypto')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const fairfs = require('..')

let checks = 0
function same(got, want, what) {
  assert.deepStrictEqual(got, want, what)
  checks++
}

function outcome(promise) {
  return promise.then(
    (value) => ({ value }),
    (e) => ({ error: { name: e.name, code: e.code, errno: e.errno, syscall: e.syscall, path: e.path, message: e.message } }),
  )
}
const viaCallback = (lib, ...args) => new Promise((resolve, reject) => lib.readFile(...args, (e, d) => (e ? reject(e) : resolve(d))))
function chunks(lib, file, options) {
  return new Promise((resolve, reject) => {
    const got = []
    lib
      .createReadStream(file, options)
      .on('data', (c) => got.push(typeof c === 'string' ? c : Buffer.from(c).toString('hex')))
      .on('error', reject)
      .on('end', () => resolve(got))
  })
}

async function main() {
  same(fairfs.backend, 'native', `backend (${fairfs.nativeError?.message})`)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairfs-smoke-'))
  try {
    const files = []
    for (const size of [0, 1, 4095, 4096, 65537, 1 << 20, (4 << 20) + 3]) {
      const file = path.join(dir, `f${size}`)
      fs.writeFileSync(file, crypto.randomBytes(size))
      files.push(file)
    }
    const missing = path.join(dir, 'missing')
    const cases = [...files, missing, dir]
    for (const file of cases) {
      for (const encoding of [undefined, 'utf8', 'latin1', 'hex', 'base64']) {
        const options = encoding && { encoding }
        same(await outcome(fairfs.promises.readFile(file, options)), await outcome(fs.promises.readFile(file, options)), `promises.readFile ${file} ${encoding}`)
        same(await outcome(viaCallback(fairfs, file, options)), await outcome(viaCallback(fs, file, options)), `readFile ${file} ${encoding}`)
      }
      for (const options of [undefined, { highWaterMark: 1000 }, { start: 3, end: 70000 }, { encoding: 'hex', highWaterMark: 65536 }]) {
        same(await outcome(chunks(fairfs, file, options)), await outcome(chunks(fs, file, options)), `createReadStream ${file} ${JSON.stringify(options)}`)
      }
      same(await outcome(fairfs.promises.stat(file).then((s) => [s.size, s.isFile()])), await outcome(fs.promises.stat(file).then((s) => [s.size, s.isFile()])), `stat ${file}`)
    }
    // settle: true resolves like Promise.allSettled.
    same(await fairfs.readFiles(files), await Promise.all(files.map((f) => fs.promises.readFile(f))), 'readFiles')
    const settled = await fairfs.readFiles(cases, { settle: true })
    const want = await Promise.allSettled(cases.map((f) => fs.promises.readFile(f)))
    same(settled.map((r) => r.status), want.map((r) => r.status), 'readFiles settle: statuses')
    same(settled.map((r) => r.value ?? r.reason.message), want.map((r) => r.value ?? r.reason.message), 'readFiles settle: values and messages')
    const controller = new AbortController()
    const aborted = fairfs.promises.readFile(files.at(-1), { signal: controller.signal })
    controller.abort()
    same((await outcome(aborted)).error?.name, 'AbortError', 'abort')
    same(fairfs.stats().backend, 'native', 'stats()')
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
  console.log(`smoke: ${checks} checks passed on ${process.versions.bun ? `Bun ${process.versions.bun}` : `Node ${process.version}`} (${fairfs.backend} backend)`)
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
