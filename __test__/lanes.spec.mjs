// Lanes (src/lanes.rs): a mount whose calls wait on a daemon gets a pool of its own that
// grows while its requests wait, so a slow mount has many requests in flight and a hung
// one holds nothing local work needs. The mount is fixtures/slowfs.py, a FUSE
// passthrough whose operations sleep on demand and which records how many requests of
// each kind it answered at once (what the kernel had in flight to it): no timing is
// asserted. Needs Linux, root, /dev/fuse and python3-fusepy
// (scripts/install-test-deps.sh); elsewhere the cases are skipped with the reason.
import test from 'ava'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import { spawn } from 'node:child_process'
import { fairfs, isNative, windows, portable, posixOnly, makeFile } from './helpers.mjs'
import { needsFuse, skipping, mountSlowfs, unmountAll } from './fixtures/slowfs.mjs'

const fuseTest = windows
  ? posixOnly('no FUSE', test.serial)
  : !isNative
    ? skipping(test.serial, "lanes are the native pool's")
    : portable
      ? skipping(test.serial, 'the portable build has no lanes (they read Linux\'s mount table)')
      : needsFuse(test.serial)

test.after.always(() => unmountAll())

/** A source tree of `dirs` directories of `per` small files each (a FUSE daemon serializes lookups within one directory). */
function tree(dirs, per) {
  const source = fs.mkdtempSync(path.join(os.tmpdir(), 'fairfs-lanes-'))
  const files = []
  for (let d = 0; d < dirs; d++) {
    fs.mkdirSync(path.join(source, `d${d}`))
    for (let f = 0; f < per; f++) {
      const rel = path.join(`d${d}`, `f${f}`)
      fs.writeFileSync(path.join(source, rel), `file ${rel}\n`)
      files.push(rel)
    }
  }
  return { source, files }
}

/** Settles `promise`, or gives `fallback` after `ms`; leaves no timer behind. */
function within(promise, ms, fallback) {
  let timer
  return Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms, fallback)))]).finally(() => clearTimeout(timer))
}

fuseTest('stats on a slow FUSE mount: many in flight at once, in a lane of the mount\'s own, where node:fs keeps four; the lane shrinks back once idle', async (t) => {
  const { source, files } = tree(16, 4)
  const fuse = await mountSlowfs({ source, options: { attrTimeout: 0, entryTimeout: 0, delays: {} } })
  t.teardown(() => fuse.unmount())
  const at = (rel) => path.join(fuse.mountpoint, rel)
  // Every name looked up once, undelayed: what is measured is getattr.
  for (const rel of files) fs.statSync(at(rel))
  fuse.setDelays({ getattr: 100 })
  const before = fuse.peaks().getattr ?? 0
  const stats = await Promise.all(files.map((rel) => fairfs.promises.stat(at(rel))))
  t.is(stats.length, files.length)
  const ours = fuse.peaks().getattr
  t.true(ours > 4 && ours > before, `the daemon answered ${ours} getattrs at once (fairfs's process-wide pool has 4 threads)`)
  const lane = fairfs.stats().lanes.find((l) => l.mountPoint === fuse.mountpoint)
  t.truthy(lane, `a lane for ${fuse.mountpoint}: ${JSON.stringify(fairfs.stats().lanes)}`)
  t.true(lane.threads > 4 && lane.threads <= 64, `the lane grew to ${lane.threads} workers`)
  t.true(lane.completed >= files.length)
  t.is(fairfs.stats().threads, 4, 'the process-wide pool kept its size')
  // Idle for a second, the lane goes back to its first four workers.
  const threadsOf = () => fairfs.stats().lanes.find((l) => l.mountPoint === fuse.mountpoint).threads
  for (let i = 0; i < 50 && threadsOf() > 4; i++) await new Promise((resolve) => setTimeout(resolve, 100))
  t.is(threadsOf(), 4, 'the idle lane shrank back to 4 workers')
})

fuseTest('a hung FUSE mount holds its lane only: local reads and stats go on', async (t) => {
  const { source, files } = tree(8, 1)
  const fuse = await mountSlowfs({ source, options: { attrTimeout: 0, entryTimeout: 0, delays: {} } })
  t.teardown(() => fuse.unmount())
  const local = makeFile(64 * 1024)
  for (const rel of files) fs.statSync(path.join(fuse.mountpoint, rel))
  fuse.stop()
  let released = false
  t.teardown(() => released || fuse.cont())
  // Eight stats on the stopped daemon: more than the process-wide pool's four threads.
  const hung = files.map((rel) => fairfs.promises.stat(path.join(fuse.mountpoint, rel)).then(() => 'done', (e) => e.code))
  const localWork = Promise.all([
    fairfs.promises.readFile(local.path),
    new Promise((resolve, reject) => fairfs.stat(local.path, (e, s) => (e ? reject(e) : resolve(s)))),
    fairfs.promises.writeFile(`${local.path}.copy`, local.data),
  ])
  // Not a timing: without lanes these wait for the daemon, which waits for us.
  const outcome = await within(localWork.then(() => 'done'), 10_000, 'waited for the hung mount')
  t.is(outcome, 'done')
  t.true(fs.readFileSync(`${local.path}.copy`).equals(local.data))
  fuse.cont()
  released = true
  t.deepEqual(await Promise.all(hung), files.map(() => 'done'), 'once the daemon answers, the stats on it complete')
})

fuseTest('process.exit() returns while reads, writes and mutations wait on a hung mount (node:fs never returns: libuv joins its threads)', async (t) => {
  const { source, files } = tree(4, 1)
  const fuse = await mountSlowfs({ source, options: { attrTimeout: 30, entryTimeout: 30, delays: {} } })
  t.teardown(() => fuse.unmount())
  const on = (rel) => JSON.stringify(path.join(fuse.mountpoint, rel))
  // The child holds no fd of the mount's itself: closing one at exit waits on the
  // daemon in the kernel, for any runtime. Its calls start once the daemon is stopped.
  const calls = [
    `fairfs.promises.readFile(${on(files[0])})`,
    `fairfs.promises.stat(${on(files[1])})`,
    `fairfs.promises.writeFile(${on('new-file')}, Buffer.alloc(3 << 20, 1))`,
    `fairfs.promises.appendFile(${on(files[2])}, 'more')`,
    `fairfs.promises.mkdir(${on('new-dir')})`,
    `fairfs.promises.rename(${on(files[3])}, ${on('renamed')})`,
  ]
  const code = `const fairfs = require(${JSON.stringify(path.resolve('.'))})
    process.stdout.write('ready\\n')
    process.stdin.once('data', () => {
      for (const p of [${calls.join(', ')}]) p.catch(() => {})
      setTimeout(() => { process.stdout.write('exiting\\n'); process.exit(3) }, 300)
    })`
  const child = spawn(process.execPath, ['-e', code], { stdio: ['pipe', 'pipe', 'inherit'] })
  t.teardown(() => child.kill('SIGKILL'))
  let out = ''
  child.stdout.setEncoding('utf8').on('data', (s) => (out += s))
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  await new Promise((resolve) => child.stdout.once('data', resolve))
  fuse.stop()
  let released = false
  t.teardown(() => released || fuse.cont())
  child.stdin.write('go\n')
  // Not a timing: 5 s only tells "returned" from "never returns".
  const outcome = await within(exited, 5_000, 'still running 5 s after its calls')
  fuse.cont()
  released = true
  t.deepEqual(outcome, { code: 3, signal: null })
  t.is(out, 'ready\nexiting\n')
})

fuseTest('a lone big file on a slow FUSE mount is read with more chunks in flight than a lane starts with: the lane grows by its parts', async (t) => {
  const source = fs.mkdtempSync(path.join(os.tmpdir(), 'fairfs-lanes-'))
  const data = crypto.randomBytes(8 * 1024 * 1024)
  fs.writeFileSync(path.join(source, 'big'), data)
  const fuse = await mountSlowfs({ source, options: { directIo: true, delays: {} } })
  t.teardown(() => fuse.unmount())
  const file = path.join(fuse.mountpoint, 'big')
  fs.statSync(file)
  fuse.setDelays({ read: 20 })
  const read = await fairfs.promises.readFile(file)
  t.true(read.equals(data))
  // 8 MiB in 512 KiB chunks, 16 parts. Without growing by parts the lane had 5 workers
  // (its first 4 and one for the request) and the daemon 5 reads at once; with it, 15.
  const peak = fuse.peaks().read
  t.true(peak >= 10, `the daemon answered ${peak} reads of one file at once (a lane starts with 4 workers)`)
  const lane = fairfs.stats().lanes.find((l) => l.mountPoint === fuse.mountpoint)
  t.truthy(lane, 'the mount has a lane')
  // At most a worker per part, and one more for a part that found the others busy.
  t.true(lane.threads >= 10 && lane.threads <= 17, `the lane has ${lane.threads} workers`)
})

fuseTest('realpath of a deep path on a mount that keeps no names walks it once: node:fs\'s realpath(3) walks every prefix again', async (t) => {
  const source = fs.mkdtempSync(path.join(os.tmpdir(), 'fairfs-lanes-'))
  const deep = path.join('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h')
  fs.mkdirSync(path.join(source, deep), { recursive: true })
  fs.writeFileSync(path.join(source, deep, 'file'), 'x')
  fs.symlinkSync(path.join('b', 'c'), path.join(source, 'a', 'link'))
  // Names and attributes not kept: every component of every walk is a lookup (a getattr).
  const fuse = await mountSlowfs({ source, options: { attrTimeout: 0, entryTimeout: 0, count: true, delays: {} } })
  t.teardown(() => fuse.unmount())
  const real = fs.realpathSync(fuse.mountpoint)
  const lookups = async (realpath, rel) => {
    const before = fuse.counts().getattr ?? 0
    const result = await realpath(path.join(fuse.mountpoint, rel))
    return { result, lookups: (fuse.counts().getattr ?? 0) - before }
  }
  for (const rel of [path.join(deep, 'file'), path.join('a', 'link', 'd', 'e', 'f', 'g', 'h', 'file')]) {
    const node = await lookups(fs.promises.realpath, rel)
    const ours = await lookups(fairfs.promises.realpath, rel)
    t.is(ours.result, node.result)
    t.is(ours.result, path.join(real, deep, 'file'))
    t.true(ours.lookups < node.lookups / 2, `${rel}: fairfs ${ours.lookups} lookups, node:fs ${node.lookups}`)
  }
  const missing = path.join(fuse.mountpoint, deep, 'none')
  const [nodeError, ourError] = await Promise.all([fs.promises.realpath(missing), fairfs.promises.realpath(missing)].map((p) => p.catch((e) => e)))
  t.deepEqual({ ...ourError, message: ourError.message }, { ...nodeError, message: nodeError.message })
})

fuseTest('files on a local disk get no lane', async (t) => {
  const { path: p } = makeFile(1024)
  const before = fairfs.stats().lanes.length
  await fairfs.promises.readFile(p)
  await fairfs.promises.stat(p)
  t.is(fairfs.stats().lanes.length, before)
})
