// Soak tests: long runs that show slow leaks (fds, pooled memory, RSS). They take
// minutes, so they are not part of `npm test`; `npm run test:soak` runs them, and CI
// does after the unit suites (.ci/run).
import test from 'ava'
import { fairfs, nativeOnly, needsRss, makeFile, openFdCount } from '../helpers.mjs'

needsRss(nativeOnly(test.serial))('300,000 reads with random aborts: no fd leaked, pool memory back, RSS stable', async (t) => {
  const files = Array.from({ length: 16 }, (_, i) => makeFile(512 + i * 12_000))
  const fdsBefore = openFdCount()
  let ok = 0
  let aborted = 0
  let rssAfterWarmup = 0
  // RSS at the last checkpoints: a leak raises all of them, while GC timing only
  // raises some, so their minimum is what is compared.
  const lateRss = []
  const rounds = 600
  const perRound = 500
  for (let round = 0; round < rounds; round++) {
    const batch = []
    for (let i = 0; i < perRound; i++) {
      const { path, data } = files[(round * perRound + i) % files.length]
      const controller = new AbortController()
      batch.push(
        fairfs.readFile(path, { signal: controller.signal }).then(
          (got) => {
            if (got.length !== data.length) t.fail('wrong length')
            ok++
          },
          (err) => {
            if (err.code !== 'ABORT_ERR') t.fail(err.message)
            aborted++
          },
        ),
      )
      const r = Math.random()
      if (r < 0.2) controller.abort()
      else if (r < 0.4) setImmediate(() => controller.abort())
    }
    await Promise.all(batch)
    if (round % 20 === 19) {
      // Let V8 free what the reads left behind (ArrayBuffers are swept concurrently,
      // and pooled memory comes back through finalizers) before sampling RSS.
      for (let i = 0; i < 2; i++) {
        globalThis.gc()
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      // The warm-up's high-water mark: pools and caches have filled by then.
      // Node 24 keeps growing its heaps for ~150,000 reads before RSS levels off.
      if (round <= 399) rssAfterWarmup = Math.max(rssAfterWarmup, process.memoryUsage().rss)
      if (round >= rounds - 60) lateRss.push(process.memoryUsage().rss)
    }
  }
  const rss = Math.min(...lateRss)
  // Finalizers return pooled memory a loop turn or more after GC.
  for (let i = 0; i < 50 && fairfs.stats().pool.outstanding > 0; i++) {
    globalThis.gc()
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  t.is(ok + aborted, rounds * perRound)
  t.true(aborted > rounds * perRound * 0.15, `aborted ${aborted}`)
  t.is(openFdCount(), fdsBefore, 'fds leaked')
  t.is(fairfs.stats().pool.outstanding, 0, 'every pooled buffer came back')
  t.true(rss < rssAfterWarmup * 1.1, `RSS grew from ${rssAfterWarmup} to ${rss}`)
  t.log(`ok ${ok}, aborted ${aborted}, RSS warm-up high ${(rssAfterWarmup / 2 ** 20).toFixed(1)} MiB, lowest of the last three checkpoints ${(rss / 2 ** 20).toFixed(1)} MiB`)
})
