// unlink, rename, mkdir and copyFile: the same call on node:fs and on fairfs, each in a fresh
// directory of its own laid out the same way, and the outcome (callback arguments,
// thrown or rejected errors with every field, a promise's value) and the directory
// afterwards compared. Paths in messages are made relative to the directory.
import test from 'ava'
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { fairfs, tmpPath, describeError, isNative, nativeOnly, posixOnly } from './helpers.mjs'

/** A directory with a file `f` (mode 640), a 3 MiB file `big`, an empty directory `d`, and a directory `full` holding `x`. */
const big = Buffer.alloc(3 * 1024 * 1024 + 7, 'b')
function layout() {
  const dir = tmpPath('mutate')
  fs.mkdirSync(dir)
  fs.writeFileSync(path.join(dir, 'f'), 'file')
  fs.chmodSync(path.join(dir, 'f'), 0o640)
  fs.writeFileSync(path.join(dir, 'big'), big)
  fs.mkdirSync(path.join(dir, 'd'))
  fs.mkdirSync(path.join(dir, 'full'))
  fs.writeFileSync(path.join(dir, 'full', 'x'), 'x')
  return dir
}

/** What is in `dir` now: each entry's kind, mode and (for files) content. */
function snapshot(dir) {
  const out = {}
  const walk = (rel) => {
    for (const name of fs.readdirSync(path.join(dir, rel)).sort()) {
      const p = path.join(dir, rel, name)
      const st = fs.lstatSync(p)
      const key = path.join(rel, name)
      const mode = (st.mode & 0o777).toString(8)
      out[key] = st.isDirectory() ? `dir ${mode}` : `file ${mode} ${crypto.createHash('sha1').update(fs.readFileSync(p)).digest('hex')}`
      if (st.isDirectory()) walk(key)
    }
  }
  walk('')
  return out
}

const relative = (dir, v) => (typeof v === 'string' ? v.split(dir).join('<dir>') : v)

function describe(dir, outcome) {
  if (outcome instanceof Error) {
    const d = describeError(outcome)
    return { ...d, path: relative(dir, d.path), message: relative(dir, d.message), dest: relative(dir, outcome.dest) }
  }
  return { value: relative(dir, outcome) }
}

/** Runs `call(fsLike, dir, done)` in a fresh layout: the callback's arguments, or what it threw. */
function runCallback(api, call) {
  const dir = layout()
  return new Promise((resolve) => {
    try {
      call(api, dir, (...args) => resolve({ args: args.map((a) => describe(dir, a ?? a)), after: snapshot(dir) }))
    } catch (err) {
      resolve({ threw: describe(dir, err), after: snapshot(dir) })
    }
  })
}

async function runPromise(api, call) {
  const dir = layout()
  let p
  try {
    p = call(api.promises, dir)
  } catch (err) {
    return { threw: describe(dir, err), after: snapshot(dir) }
  }
  try {
    return { resolved: describe(dir, await p), after: snapshot(dir) }
  } catch (err) {
    return { rejected: describe(dir, err), after: snapshot(dir) }
  }
}

const j = path.join
const cases = {
  'unlink a file': { cb: (f, d, done) => f.unlink(j(d, 'f'), done), p: (f, d) => f.unlink(j(d, 'f')) },
  'unlink a missing file (ENOENT)': { cb: (f, d, done) => f.unlink(j(d, 'nope'), done), p: (f, d) => f.unlink(j(d, 'nope')) },
  'unlink a directory (EISDIR)': { cb: (f, d, done) => f.unlink(j(d, 'd'), done), p: (f, d) => f.unlink(j(d, 'd')) },
  'unlink under a file (ENOTDIR)': { cb: (f, d, done) => f.unlink(j(d, 'f', 'x'), done), p: (f, d) => f.unlink(j(d, 'f', 'x')) },
  'unlink a Buffer path and a file: URL': {
    cb: (f, d, done) => f.unlink(Buffer.from(j(d, 'f')), () => f.unlink(pathToFileURL(j(d, 'full', 'x')), done)),
    p: (f, d) => f.unlink(Buffer.from(j(d, 'f'))).then(() => f.unlink(pathToFileURL(j(d, 'full', 'x')))),
  },
  'unlink a path with a NUL byte': { cb: (f, d, done) => f.unlink(`${d}/a\u0000b`, done), p: (f, d) => f.unlink(`${d}/a\u0000b`) },
  'unlink a number': { cb: (f, d, done) => f.unlink(1, done), p: (f) => f.unlink(1) },
  'unlink without a callback': { cb: (f, d) => f.unlink(j(d, 'f')) },
  'rename a file': { cb: (f, d, done) => f.rename(j(d, 'f'), j(d, 'g'), done), p: (f, d) => f.rename(j(d, 'f'), j(d, 'g')) },
  'rename a file over another': { cb: (f, d, done) => f.rename(j(d, 'f'), j(d, 'full', 'x'), done), p: (f, d) => f.rename(j(d, 'f'), j(d, 'full', 'x')) },
  'rename a directory into a new name': { cb: (f, d, done) => f.rename(j(d, 'full'), j(d, 'moved'), done), p: (f, d) => f.rename(j(d, 'full'), j(d, 'moved')) },
  'rename a missing file (ENOENT, with dest)': { cb: (f, d, done) => f.rename(j(d, 'nope'), j(d, 'g'), done), p: (f, d) => f.rename(j(d, 'nope'), j(d, 'g')) },
  'rename a directory over a non-empty one (ENOTEMPTY)': { cb: (f, d, done) => f.rename(j(d, 'd'), j(d, 'full'), done), p: (f, d) => f.rename(j(d, 'd'), j(d, 'full')) },
  'rename a file over a directory (EISDIR)': { cb: (f, d, done) => f.rename(j(d, 'f'), j(d, 'd'), done), p: (f, d) => f.rename(j(d, 'f'), j(d, 'd')) },
  'rename with a bad new path': { cb: (f, d, done) => f.rename(j(d, 'f'), 5, done), p: (f, d) => f.rename(j(d, 'f'), 5) },
  'mkdir': { cb: (f, d, done) => f.mkdir(j(d, 'new'), done), p: (f, d) => f.mkdir(j(d, 'new')) },
  'mkdir with a mode number': { cb: (f, d, done) => f.mkdir(j(d, 'new'), 0o700, done), p: (f, d) => f.mkdir(j(d, 'new'), 0o700) },
  'mkdir with a mode string': { cb: (f, d, done) => f.mkdir(j(d, 'new'), '750', done), p: (f, d) => f.mkdir(j(d, 'new'), '750') },
  'mkdir with { mode }': { cb: (f, d, done) => f.mkdir(j(d, 'new'), { mode: 0o711 }, done), p: (f, d) => f.mkdir(j(d, 'new'), { mode: 0o711 }) },
  'mkdir with a bad mode': { cb: (f, d, done) => f.mkdir(j(d, 'new'), { mode: 'rwx' }, done), p: (f, d) => f.mkdir(j(d, 'new'), { mode: 'rwx' }) },
  'mkdir of an existing directory (EEXIST)': { cb: (f, d, done) => f.mkdir(j(d, 'd'), done), p: (f, d) => f.mkdir(j(d, 'd')) },
  'mkdir under a missing directory (ENOENT)': { cb: (f, d, done) => f.mkdir(j(d, 'a', 'b'), done), p: (f, d) => f.mkdir(j(d, 'a', 'b')) },
  'mkdir recursive (node:fs\'s walk: the first directory made)': {
    cb: (f, d, done) => f.mkdir(j(d, 'a', 'b', 'c'), { recursive: true }, done),
    p: (f, d) => f.mkdir(j(d, 'a', 'b', 'c'), { recursive: true }),
  },
  'mkdir recursive under a file (ENOTDIR)': {
    cb: (f, d, done) => f.mkdir(j(d, 'f', 'b'), { recursive: true }, done),
    p: (f, d) => f.mkdir(j(d, 'f', 'b'), { recursive: true }),
  },
  'copyFile a file (its mode too)': { cb: (f, d, done) => f.copyFile(j(d, 'f'), j(d, 'g'), done), p: (f, d) => f.copyFile(j(d, 'f'), j(d, 'g')) },
  'copyFile 3 MiB over an existing file': { cb: (f, d, done) => f.copyFile(j(d, 'big'), j(d, 'full', 'x'), done), p: (f, d) => f.copyFile(j(d, 'big'), j(d, 'full', 'x')) },
  'copyFile a missing file (ENOENT, with dest)': { cb: (f, d, done) => f.copyFile(j(d, 'nope'), j(d, 'g'), done), p: (f, d) => f.copyFile(j(d, 'nope'), j(d, 'g')) },
  'copyFile into a missing directory': { cb: (f, d, done) => f.copyFile(j(d, 'f'), j(d, 'a', 'g'), done), p: (f, d) => f.copyFile(j(d, 'f'), j(d, 'a', 'g')) },
  'copyFile COPYFILE_EXCL over an existing file (EEXIST)': {
    cb: (f, d, done) => f.copyFile(j(d, 'f'), j(d, 'full', 'x'), fs.constants.COPYFILE_EXCL, done),
    p: (f, d) => f.copyFile(j(d, 'f'), j(d, 'full', 'x'), fs.constants.COPYFILE_EXCL),
  },
  'copyFile COPYFILE_EXCL to a new name': {
    cb: (f, d, done) => f.copyFile(j(d, 'big'), j(d, 'g'), fs.constants.COPYFILE_EXCL, done),
    p: (f, d) => f.copyFile(j(d, 'big'), j(d, 'g'), fs.constants.COPYFILE_EXCL),
  },
  'copyFile COPYFILE_FICLONE (a copy where the file system cannot clone)': {
    cb: (f, d, done) => f.copyFile(j(d, 'big'), j(d, 'g'), fs.constants.COPYFILE_FICLONE, done),
    p: (f, d) => f.copyFile(j(d, 'big'), j(d, 'g'), fs.constants.COPYFILE_FICLONE),
  },
  'copyFile COPYFILE_FICLONE_FORCE': {
    cb: (f, d, done) => f.copyFile(j(d, 'big'), j(d, 'g'), fs.constants.COPYFILE_FICLONE_FORCE, done),
    p: (f, d) => f.copyFile(j(d, 'big'), j(d, 'g'), fs.constants.COPYFILE_FICLONE_FORCE),
  },
  'copyFile onto itself': { cb: (f, d, done) => f.copyFile(j(d, 'f'), j(d, 'f'), done), p: (f, d) => f.copyFile(j(d, 'f'), j(d, 'f')) },
  'copyFile of a directory': { cb: (f, d, done) => f.copyFile(j(d, 'full'), j(d, 'g'), done), p: (f, d) => f.copyFile(j(d, 'full'), j(d, 'g')) },
  'copyFile onto a directory': { cb: (f, d, done) => f.copyFile(j(d, 'f'), j(d, 'd'), done), p: (f, d) => f.copyFile(j(d, 'f'), j(d, 'd')) },
  'copyFile with mode 8': { cb: (f, d, done) => f.copyFile(j(d, 'f'), j(d, 'g'), 8, done), p: (f, d) => f.copyFile(j(d, 'f'), j(d, 'g'), 8) },
  "copyFile with mode '1'": { cb: (f, d, done) => f.copyFile(j(d, 'f'), j(d, 'g'), '1', done), p: (f, d) => f.copyFile(j(d, 'f'), j(d, 'g'), '1') },
  'copyFile with a bad src': { cb: (f, d, done) => f.copyFile(null, j(d, 'g'), done), p: (f, d) => f.copyFile(null, j(d, 'g')) },
  'mkdir with a bad recursive': { cb: (f, d, done) => f.mkdir(j(d, 'new'), { recursive: 1 }, done), p: (f, d) => f.mkdir(j(d, 'new'), { recursive: 1 }) },
}

for (const [name, { cb, p }] of Object.entries(cases)) {
  test(`${name}: callback form as node:fs`, async (t) => {
    t.deepEqual(await runCallback(fairfs, cb), await runCallback(fs, cb))
  })
  if (p) {
    test(`${name}: promise form as node:fs`, async (t) => {
      t.deepEqual(await runPromise(fairfs, p), await runPromise(fs, p))
    })
  }
}

nativeOnly(posixOnly("copies are node:fs's there", test.serial))('a big copy is cut into chunks on the pool, counted as written', async (t) => {
  const dir = layout()
  const before = fairfs.stats()
  await fairfs.promises.copyFile(path.join(dir, 'big'), path.join(dir, 'copy'))
  const after = fairfs.stats()
  t.is(after.bytesWritten - before.bytesWritten, big.length)
  t.true(after.chunksWritten - before.chunksWritten >= Math.ceil(big.length / after.chunkSize), 'a chunk per step')
  t.true(fs.readFileSync(path.join(dir, 'copy')).equals(big))
})

test.serial('install() puts them on node:fs and its promises, uninstall() takes them back', (t) => {
  const before = { unlink: fs.unlink, rename: fs.rename, mkdir: fs.mkdir, copyFile: fs.copyFile, p: fs.promises.unlink }
  fairfs.install()
  t.teardown(() => fairfs.uninstall())
  if (isNative) {
    t.is(fs.unlink, fairfs.unlink)
    t.is(fs.rename, fairfs.rename)
    t.is(fs.mkdir, fairfs.mkdir)
    t.is(fs.copyFile, fairfs.copyFile)
    t.is(fs.promises.unlink, fairfs.promises.unlink)
  } else {
    t.is(fs.unlink, before.unlink, 'the node backend patches nothing')
  }
  fairfs.uninstall()
  t.deepEqual({ unlink: fs.unlink, rename: fs.rename, mkdir: fs.mkdir, copyFile: fs.copyFile, p: fs.promises.unlink }, before)
})
