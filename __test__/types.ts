// Checked by `tsc --noEmit --strict` in npm test: the overloads give Buffer without
// an encoding and string with one.
import fairfs, { readFile, readFiles, promises, createReadStream, configure, stats, backend, nativeError } from '../index.js'
import type { Buffer } from 'node:buffer'

async function check(): Promise<void> {
  const b: Buffer = await readFile('/etc/hostname')
  const s: string = await readFile('/etc/hostname', 'utf8')
  const s2: string = await readFile('/etc/hostname', { encoding: 'latin1', signal: AbortSignal.timeout(100) })
  const p: Buffer = await promises.readFile(new URL('file:///etc/hostname'))
  readFile('/etc/hostname', (err, data: Buffer) => void [err?.code, data.length])
  readFile(3, 'hex', (err, data: string) => void [err, data.length])
  const many: Buffer[] = await readFiles(['/a', '/b'])
  const settled = await readFiles(['/a'], { settle: true, encoding: 'utf8' })
  if (settled[0].status === 'fulfilled') settled[0].value.toUpperCase()
  const stream = createReadStream('/etc/hostname', { start: 0, end: 10, highWaterMark: 1024, readAhead: 2 })
  stream.on('data', (chunk) => void chunk)
  configure({ threads: 2, chunkSize: 1 << 20, nice: 5 })
  const st = stats()
  // The pool's counters exist on the native backend only: narrow on `backend`.
  const n: number = st.backend === 'native' ? st.pool.hits + st.bytesRead : st.maxLength
  const threads: number | undefined = st.backend === 'node' ? st.configured.threads : st.threads
  const which: 'native' | 'node' = fairfs.backend === backend ? backend : fairfs.stats().backend
  const why: string | undefined = nativeError?.message
  void [b, s, s2, p, many, n, threads, which, why]
  // stat, lstat and access have node:fs's types.
  const size: number = (await fairfs.promises.stat('/etc/hostname')).size
  const ino: bigint = (await fairfs.promises.lstat('/etc/hostname', { bigint: true })).ino
  fairfs.stat('/etc/hostname', (err, st) => void (err ?? st.isFile()))
  fairfs.access('/etc/hostname', 4, (err) => void err)
  void [size, ino]
  // @ts-expect-error stats() may come from the node backend, which has no pool
  void stats().pool.hits
  // @ts-expect-error a string result is not a Buffer
  const wrong: Buffer = await readFile('/etc/hostname', 'utf8')
  void wrong
}
void check
