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
import { fairfs, isNative, windows, portable, posixOnly, emulated, makeFile } from './helpers.mjs'
import { needsFuse, skipping, mountSlowfs, unmountAll } from './fixtures/slowfs.mjs'

const fuseTest = windows
  ? posixOnly('no FUSE', test.serial)
  : !isNative
    ? skipping(test.serial, "lanes are the native pool's")
    : portable
      ? skipping(test.serial, 'the portable build has no lanes (they read Linux\'s mount table)')
      : needsFuse(test.serial)

test.after.always(() => unmountAll())

/**
 * For cases routed by what only the kernel can say (where a path leads, found by
 * openat2's cached lookup; an fd's mount id, from statx): qemu-user emulates neither,
 * and there lanes go by the mount points alone.
 */
const kernelRoutedTest = emulated ? skipping(test.serial, 'qemu-user emulates neither openat2 nor statx mount ids: lanes go by the mount points alone') : fuseTest

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

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** What a request came to: 'done', or its error's code. Never rejects. */
const settled = (promise) => promise.then(() => 'done', (e) => e?.code ?? String(e))

/** This process's threads now. */
const threadCount = () => fs.readdirSync('/proc/self/task').length

/** Where requests are, for a failure's message: the process-wide pool's and `fuse`'s lane's. */
function whereRequestsAre(fuse) {
  const s = fairfs.stats()
  const lane = s.lanes.find((l) => l.mountPoint === fuse.mountpoint)
  const laneText = lane ? `its lane ${lane.active} running, ${lane.queued} queued` : 'no lane for the mount'
  return `the process-wide pool ${s.active} running, ${s.queued} queued; ${laneText}`
}

/**
 * Local work beside a hung mount: a 4 MiB readFile (past the calling thread's fast
 * path, so it needs a pool thread), a stat and a writeFile. Resolves after at most
 * 10 s with `waiting` (the names of those not done yet) and `intact` (resolves, once
 * all are done, with whether the bytes read and written are the file's).
 */
async function localWork() {
  const local = makeFile(4 << 20)
  const waiting = new Set(['readFile', 'stat', 'writeFile'])
  const work = (name, promise) => promise.then((value) => (waiting.delete(name), value))
  const all = Promise.all([
    work('readFile', fairfs.promises.readFile(local.path)),
    work('stat', new Promise((resolve, reject) => fairfs.stat(local.path, (e, s) => (e ? reject(e) : resolve(s))))),
    work('writeFile', fairfs.promises.writeFile(`${local.path}.copy`, local.data)),
  ])
  // Not a timing: where the hung mount holds the pool's threads, these wait for the
  // daemon, which waits for us.
  await within(all, 10_000)
  return { waiting: [...waiting], intact: all.then(([read]) => read.equals(local.data) && fs.readFileSync(`${local.path}.copy`).equals(local.data)) }
}

/**
 * Stops `fuse`'s daemon, makes the requests `hang()` returns (promises that wait on
 * it), runs local work beside them, and resumes the daemon. Everything settles before
 * anything is asserted, so a failure leaves nothing waiting on the mount or on a pool
 * thread. Then: the local work finished within 10 s, and every hung request completed.
 */
async function besideHungRequests(t, fuse, hang) {
  fuse.stop()
  let released = false
  t.teardown(() => released || fuse.cont())
  const hung = hang().map(settled)
  const local = await localWork()
  const where = whereRequestsAre(fuse)
  fuse.cont()
  released = true
  const outcomes = await Promise.all(hung)
  const intact = await local.intact
  t.deepEqual(local.waiting, [], `local work still waiting 10 s beside ${hung.length} requests on the hung mount (${where})`)
  t.true(intact, 'the local read and write have the file\'s bytes')
  t.deepEqual(outcomes, hung.map(() => 'done'), 'once the daemon answers, the requests on it complete')
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

// Requests on a hung mount that must find its lane although their path or fd does not
// say so plainly. Names and attributes are not kept (timeouts 0), so with the daemon
// stopped the kernel's cached lookup (RESOLVE_CACHED) fails for each of them and only
// the way it is spelled is left to go by. Sixteen requests: more than the process-wide
// pool's four threads, which must be left to the local work.

/**
 * `dirs` directories of one file each on a slowfs mount that keeps names and
 * attributes `seconds` (0: none), unmounted when the test ends.
 */
async function mountTree(t, dirs, seconds = 0) {
  const { source, files } = tree(dirs, 1)
  const fuse = await mountSlowfs({ source, options: { attrTimeout: seconds, entryTimeout: seconds, delays: {} } })
  t.teardown(() => fuse.unmount())
  return { source, files, fuse }
}

/** A symlink to `target` on the local disk: its path names no mount point. */
function localLinkTo(target) {
  const link = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'fairfs-lanes-link-')), 'mnt')
  fs.symlinkSync(target, link)
  return link
}

kernelRoutedTest('a hung FUSE mount reached through a symlink on the local disk holds its lane only', async (t) => {
  const { files, fuse } = await mountTree(t, 16)
  const link = localLinkTo(fuse.mountpoint)
  for (const rel of files) fs.statSync(path.join(link, rel))
  await besideHungRequests(t, fuse, () =>
    files.map((rel, i) => (i % 2 ? fairfs.promises.stat(path.join(link, rel)) : fairfs.promises.readFile(path.join(link, rel)))),
  )
})

/** Why the kernel's dentry cache cannot be emptied here (drop_caches is root's), or null. */
const dropReason = (() => {
  try {
    fs.accessSync('/proc/sys/vm/drop_caches', fs.constants.W_OK)
    return null
  } catch (e) {
    return `cannot empty the dentry cache (/proc/sys/vm/drop_caches: ${e.code})`
  }
})()
const dropTest = dropReason ? skipping(test.serial, dropReason) : kernelRoutedTest

dropTest('a hung FUSE mount reached through a symlink the kernel has not cached holds no thread of the local pool', async (t) => {
  const { files, fuse } = await mountTree(t, 16)
  const link = localLinkTo(fuse.mountpoint)
  for (const rel of files) fs.statSync(path.join(link, rel))
  // Forget every cached name (the link's among them): its lookup now reads the disk,
  // and only that read would tell that it leads into the mount.
  fs.writeFileSync('/proc/sys/vm/drop_caches', '2')
  await besideHungRequests(t, fuse, () =>
    files.map((rel, i) => (i % 2 ? fairfs.promises.stat(path.join(link, rel)) : fairfs.promises.readFile(path.join(link, rel)))),
  )
})

kernelRoutedTest('a hung FUSE mount reached by a path with doubled slashes holds its lane only', async (t) => {
  const { files, fuse } = await mountTree(t, 16)
  // Spellings of the mount point that no prefix match finds: `//tmp/.../mnt/f` and
  // `/tmp/...//mnt/f`. (`${mountpoint}//f` is found: the point, then a slash.)
  const { dir, base } = path.parse(fuse.mountpoint)
  const spellings = [(rel) => `/${fuse.mountpoint}/${rel}`, (rel) => `${dir}//${base}/${rel}`]
  const at = (rel, i) => spellings[i % 2](rel)
  for (const [i, rel] of files.entries()) fs.statSync(at(rel, i))
  await besideHungRequests(t, fuse, () =>
    files.map((rel, i) => (i % 4 < 2 ? fairfs.promises.stat(at(rel, i)) : fairfs.promises.readFile(at(rel, i)))),
  )
})

fuseTest('copyFile from the local disk to a hung FUSE mount holds its lane only', async (t) => {
  const { source, fuse } = await mountTree(t, 1)
  // The source is local: only the destination says where the copy waits.
  const from = makeFile(64 * 1024, 'copy-source')
  const names = Array.from({ length: 16 }, (_, i) => `copy${i}`)
  await besideHungRequests(t, fuse, () => names.map((name) => fairfs.promises.copyFile(from.path, path.join(fuse.mountpoint, name))))
  for (const name of names) t.true(fs.readFileSync(path.join(source, name)).equals(from.data), `${name} is the whole copy`)
})

fuseTest('rename within a hung FUSE mount, from a path reached through a symlink or doubled slashes, holds its lane only', async (t) => {
  // Within one mount a rename's lane is its first path's, so what can miss the lane is
  // that path's spelling (a rename across mounts fails with EXDEV, asking neither).
  const { source, files, fuse } = await mountTree(t, 16)
  const link = localLinkTo(fuse.mountpoint)
  const from = (rel, i) => (i % 2 ? path.join(link, rel) : `/${fuse.mountpoint}/${rel}`)
  for (const [i, rel] of files.entries()) fs.statSync(from(rel, i))
  await besideHungRequests(t, fuse, () =>
    files.map((rel, i) => fairfs.promises.rename(from(rel, i), path.join(fuse.mountpoint, `${rel}.renamed`))),
  )
  for (const rel of files) t.true(fs.existsSync(path.join(source, `${rel}.renamed`)) && !fs.existsSync(path.join(source, rel)), `${rel} renamed`)
})

/**
 * An fd number whose close fairfs did not see, reused on a hung mount: eight local
 * files are opened, written once each with fairfs's fs.write (which gives each fd its
 * lane, the process-wide pool, until fairfs closes it), closed by `closeUnseen` (node:fs's
 * own), and eight files on the mount opened at once take the same numbers. Then a
 * write and an fsync on each, sixteen requests in eight fd flows (one flow holds one
 * thread at a time): they must go to the mount's lane, not to the pool the numbers'
 * earlier lives had.
 */
async function reusedFdsOnHungMount(t, { openLocal, closeUnseen }) {
  const source = fs.mkdtempSync(path.join(os.tmpdir(), 'fairfs-lanes-'))
  const fuse = await mountSlowfs({ source, options: { attrTimeout: 0, entryTimeout: 0, delays: {} } })
  t.teardown(() => fuse.unmount())
  // fs.write, fs.fsync and fs.close are fairfs's under install(); openSync and
  // closeSync stay node:fs's.
  const nodeWrite = fs.write
  fairfs.install()
  t.teardown(() => fairfs.uninstall())
  t.not(fs.write, nodeWrite, "install() put fairfs's fs.write on node:fs")
  // install() learns FileHandle's prototype from an open of its own: let it close
  // first, so that it takes no fd number in between.
  await sleep(200)
  const call = (fn, ...args) => new Promise((resolve, reject) => fn(...args, (e) => (e ? reject(e) : resolve())))

  const locals = Array.from({ length: 8 }, (_, i) => makeFile(16, `reused-${i}`).path)
  const localFds = await openLocal(locals)
  await Promise.all(localFds.map((fd) => call(fs.write, fd, Buffer.from('local\n'))))
  await closeUnseen()
  // The lowest free numbers: the ones just closed, unless something else took one.
  const fds = []
  t.teardown(() => {
    fuse.cont()
    for (const fd of fds) fs.closeSync(fd)
  })
  for (let i = 0; i < locals.length; i++) fds.push(fs.openSync(path.join(fuse.mountpoint, `w${i}`), 'w'))
  const sorted = (a) => [...a].sort((x, y) => x - y)
  if (!t.deepEqual(sorted(fds), sorted(localFds), 'the mount\'s files took the closed fds\' numbers (else this case cannot be made here)')) return

  const data = Buffer.alloc(64 * 1024, 1)
  await besideHungRequests(t, fuse, () => fds.flatMap((fd) => [call(fs.write, fd, data), call(fs.fsync, fd)]))
  // fairfs's close: the fds' next lives take the lane their mounts say.
  await Promise.all(fds.splice(0).map((fd) => call(fs.close, fd)))
  for (let i = 0; i < locals.length; i++) t.true(fs.readFileSync(path.join(source, `w${i}`)).equals(data), `w${i} has its bytes`)
}

kernelRoutedTest('an fd closed with closeSync, which fairfs did not see, reused on a hung FUSE mount: its writes and fsyncs hold the lane only', async (t) => {
  let fds
  await reusedFdsOnHungMount(t, {
    openLocal: async (paths) => (fds = paths.map((p) => fs.openSync(p, 'r+'))),
    closeUnseen: async () => fds.forEach((fd) => fs.closeSync(fd)),
  })
})

kernelRoutedTest('an fd closed with FileHandle.close(), which fairfs did not see, reused on a hung FUSE mount: its writes and fsyncs hold the lane only', async (t) => {
  let handles = []
  await reusedFdsOnHungMount(t, {
    // One at a time: each takes the lowest free number.
    openLocal: async (paths) => {
      for (const p of paths) handles.push(await fs.promises.open(p, 'r+'))
      return handles.map((h) => h.fd)
    },
    closeUnseen: async () => {
      for (const h of handles) await h.close()
    },
  })
})

/**
 * Makes thread counts mean what a test's requests started: fairfs's own threads (its
 * pool, the mount table's watcher) and libuv's are up, and every lane is back to its
 * first four workers (5 s at most), so none shrinks meanwhile. Lanes are kept by mount
 * id, which the kernel gives again to a later mount: a new mount may come with an
 * earlier one's lane.
 */
async function threadsAtRest() {
  const { path: p } = makeFile(1 << 20, 'warm')
  await Promise.all([fairfs.promises.readFile(p), fairfs.promises.stat(p), fs.promises.stat(p)])
  for (let i = 0; i < 50 && fairfs.stats().lanes.some((l) => l.threads > 4); i++) await sleep(100)
}

/** The threads of `fuse`'s lane (0 where it has none). */
const laneThreads = (fuse) => fairfs.stats().lanes.find((l) => l.mountPoint === fuse.mountpoint)?.threads ?? 0

fuseTest('five hung FUSE mounts hold 64 lane threads between them at most, the process-wide cap users give libuv', async (t) => {
  const mounts = []
  for (let m = 0; m < 5; m++) {
    // Files the kernel never looked up: every request on them waits on the daemon.
    const { source, files } = tree(10, 10)
    const fuse = await mountSlowfs({ source, options: { attrTimeout: 0, entryTimeout: 0, delays: {} } })
    t.teardown(() => fuse.unmount())
    mounts.push({ fuse, files })
  }
  let released = false
  t.teardown(() => released || mounts.forEach(({ fuse }) => fuse.cont()))
  await threadsAtRest()
  const before = threadCount()
  for (const { fuse } of mounts) fuse.stop()
  const hung = mounts.flatMap(({ fuse, files }) =>
    files.map((rel, i) => settled(i % 2 ? fairfs.promises.stat(path.join(fuse.mountpoint, rel)) : fairfs.promises.readFile(path.join(fuse.mountpoint, rel)))),
  )
  await sleep(2000) // the lanes grow as their requests queue: all they will by now
  const grown = threadCount() - before
  const lanes = mounts.map(({ fuse }) => laneThreads(fuse))
  for (const { fuse } of mounts) fuse.cont()
  released = true
  const outcomes = await Promise.all(hung)
  // 64 lane threads in all (the lanes' first workers among them), a worker for each
  // lane made once they are taken (it could finish nothing without), and a few for
  // whatever else starts meanwhile.
  t.true(grown <= 64 + 5 + 3, `${grown} more threads with five mounts hung, 100 requests each (their lanes' threads: ${lanes.join(', ')})`)
  // One lane holds half of what the others leave at most: the first hung mount left
  // room for the next ones to grow.
  t.log(`lanes' threads: ${lanes.join(', ')}`)
  t.true(Math.max(...lanes) <= 32, `no lane took more than half the cap (${lanes.join(', ')})`)
  t.true(lanes.filter((n) => n > 4).length >= 2, `more than one hung mount's lane grew (${lanes.join(', ')})`)
  t.deepEqual(outcomes, hung.map(() => 'done'), 'once the daemons answer, the requests on them complete')
})

fuseTest('sixteen hung stats on a FUSE mount grow its lane by sixteen threads at most: one a request', async (t) => {
  const { source, files } = tree(16, 1)
  const fuse = await mountSlowfs({ source, options: { attrTimeout: 0, entryTimeout: 0, delays: {} } })
  t.teardown(() => fuse.unmount())
  let released = false
  t.teardown(() => released || fuse.cont())
  await threadsAtRest()
  // A lane this mount's id had before (a mount since gone) is not this mount's: its
  // idle workers take none of these requests, and a lane of its own starts.
  const before = threadCount()
  fuse.stop()
  const hung = files.map((rel) => settled(fairfs.promises.stat(path.join(fuse.mountpoint, rel))))
  await sleep(2000)
  const grown = threadCount() - before
  const lane = laneThreads(fuse)
  fuse.cont()
  released = true
  const outcomes = await Promise.all(hung)
  // A worker a request: no more than sixteen in the lane, nor new threads.
  t.true(lane <= 16, `16 hung stats: the lane has ${lane} workers`)
  t.true(grown <= 16, `16 hung stats started ${grown} threads`)
  t.deepEqual(outcomes, hung.map(() => 'done'), 'once the daemon answers, the stats complete')
})

/**
 * A child that makes `calls` (expressions of its `fairfs`) once `fuse`'s daemon is
 * stopped, and calls process.exit(3) 300 ms later. The child holds no fd of the mount's
 * itself: closing one at exit waits on the daemon in the kernel, for any runtime.
 * Resolves once the child has made its exit call (or exited), with `exited` (its code
 * and signal, once it is gone) and `out()` (its stdout so far).
 */
async function exitBesideHungCalls(t, fuse, calls) {
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
  child.stdin.write('go\n')
  await new Promise((resolve) => {
    child.stdout.on('data', () => out.includes('exiting\n') && resolve())
    exited.then(resolve)
  })
  return { exited, out: () => out }
}

fuseTest('process.exit() returns while reads and stats wait on a hung mount (node:fs never returns: libuv joins its threads)', async (t) => {
  const { files, fuse } = await mountTree(t, 4, 30)
  const on = (rel) => JSON.stringify(path.join(fuse.mountpoint, rel))
  let released = false
  t.teardown(() => released || fuse.cont())
  // Reads and metadata change nothing: they may be dropped at exit.
  const { exited, out } = await exitBesideHungCalls(t, fuse, [
    `fairfs.promises.readFile(${on(files[0])})`,
    `fairfs.promises.stat(${on(files[1])})`,
    `fairfs.promises.readdir(${on(path.dirname(files[2]))})`,
    `fairfs.promises.access(${on(files[3])})`,
  ])
  // Not a timing: 5 s only tells "returned" from "never returns".
  const outcome = await within(exited, 5_000, 'still running 5 s after its exit call')
  fuse.cont()
  released = true
  t.deepEqual(outcome, { code: 3, signal: null })
  t.is(out(), 'ready\nexiting\n')
})

fuseTest('process.exit() waits, as node:fs does, for a writeFile and a mkdir accepted before it on a hung mount: they complete once the daemon answers', async (t) => {
  const { source, fuse } = await mountTree(t, 1, 30)
  const on = (rel) => JSON.stringify(path.join(fuse.mountpoint, rel))
  let released = false
  t.teardown(() => released || fuse.cont())
  // Accepted writes are the caller's data: node:fs's queued work runs before the
  // process is gone, so a write on a hung mount holds exit, and fairfs's must too.
  const { exited, out } = await exitBesideHungCalls(t, fuse, [
    `fairfs.promises.writeFile(${on('new-file')}, Buffer.alloc(3 << 20, 1))`,
    `fairfs.promises.mkdir(${on('new-dir')})`,
  ])
  // Not a timing: a process that dropped the writes is gone well before 3 s.
  const early = await within(exited, 3_000, 'still running')
  fuse.cont()
  released = true
  const outcome = await within(exited, 20_000, 'still running 20 s after the daemon resumed')
  t.is(early, 'still running', 'process.exit() returned with a writeFile and a mkdir on the hung mount not done')
  t.deepEqual(outcome, { code: 3, signal: null })
  t.is(out(), 'ready\nexiting\n')
  const written = fs.readFileSync(path.join(source, 'new-file'))
  t.true(written.equals(Buffer.alloc(3 << 20, 1)), `new-file has ${written.length} bytes of 3 MiB`)
  t.true(fs.statSync(path.join(source, 'new-dir')).isDirectory())
})

fuseTest('a lone big file on a slow FUSE mount is read with more chunks in flight than a lane starts with: the lane grows by its parts', async (t) => {
  const source = fs.mkdtempSync(path.join(os.tmpdir(), 'fairfs-lanes-'))
  const data = crypto.randomBytes(8 * 1024 * 1024)
  fs.writeFileSync(path.join(source, 'big'), data)
  const fuse = await mountSlowfs({ source, options: { directIo: true, delays: {} } })
  t.teardown(() => fuse.unmount())
  const file = path.join(fuse.mountpoint, 'big')
  fs.statSync(file)
  // 100 ms per read: long enough that, on a busy machine too, parts are still being
  // read when the next ones are handed out (with 20 ms a CI run once saw 4 at once).
  fuse.setDelays({ read: 100 })
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
