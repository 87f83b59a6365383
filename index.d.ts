// Type declarations for fairfs: node:fs-compatible, fast and fair file reads.
import type { Buffer } from 'node:buffer'
import type { PathLike, ReadStream as FsReadStream } from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import type { Readable } from 'node:stream'

/**
 * The backend in use, chosen once at load (env FAIRFS_BACKEND): 'native' (fairfs's pool)
 * or 'node' (node:fs itself, where the native addon does not load, or FAIRFS_BACKEND=node).
 */
export const backend: 'native' | 'node'
/** Why the native addon did not load (the backend is then 'node'): fairfs's explanation (no binary for this
 *  platform, its package not installed, or it failed to load), with the loader's error as `cause`; or null. */
export const nativeError: Error | null

/** A path, a `file:` URL, an open fd or a FileHandle (read from its position, not closed). */
export type PathOrFd = PathLike | number | FileHandle

export interface ReadFileOptions {
  encoding?: BufferEncoding | null
  /** A flag string ('r', 'a+', 'wx', ...) or O_* bits; default 'r'. */
  flag?: string | number
  signal?: AbortSignal
}

export type ReadFileCallback<T> = (err: NodeJS.ErrnoException | null, data: T) => void

/** Reads a whole file, like `fs.readFile`; without a callback it returns a promise. */
export function readFile(path: PathOrFd, callback: ReadFileCallback<Buffer>): void
export function readFile(path: PathOrFd, options: BufferEncoding | (ReadFileOptions & { encoding: BufferEncoding }), callback: ReadFileCallback<string>): void
export function readFile(path: PathOrFd, options: (ReadFileOptions & { encoding?: null }) | null | undefined, callback: ReadFileCallback<Buffer>): void
export function readFile(path: PathOrFd, options: BufferEncoding | (ReadFileOptions & { encoding: BufferEncoding })): Promise<string>
export function readFile(path: PathOrFd, options?: (ReadFileOptions & { encoding?: null }) | null): Promise<Buffer>

export interface ReadFilesOptions extends ReadFileOptions {
  /** Resolve with one `PromiseSettledResult` per file instead of rejecting on the first error. */
  settle?: boolean
}

/** Reads many files in one call; results in the order of `paths`. */
export function readFiles(paths: Iterable<PathLike | number>, options: ReadFilesOptions & { settle: true; encoding: BufferEncoding }): Promise<PromiseSettledResult<string>[]>
export function readFiles(paths: Iterable<PathLike | number>, options: ReadFilesOptions & { settle: true }): Promise<PromiseSettledResult<Buffer>[]>
export function readFiles(paths: Iterable<PathLike | number>, options: BufferEncoding | (ReadFilesOptions & { encoding: BufferEncoding })): Promise<string[]>
export function readFiles(paths: Iterable<PathLike | number>, options?: ReadFilesOptions | null): Promise<Buffer[]>

export type WriteFileData = string | NodeJS.ArrayBufferView
export interface WriteFileOptions {
  /** For string data; default 'utf8'. */
  encoding?: BufferEncoding | null
  /** For a file it creates; default 0o666 (before the umask). */
  mode?: number | string
  /** A flag string ('w', 'a', 'wx', 'r+', ...) or O_* bits; default 'w' (appendFile: 'a'). */
  flag?: string | number
  /** `fsync` before the close, so the data reached the disk when it settles. */
  flush?: boolean
  signal?: AbortSignal
}
export type WriteFileCallback = (err: NodeJS.ErrnoException | null) => void

/** Writes a whole file, like `fs.writeFile`; without a callback it returns a promise.
 *  An fd is written at its position and left open. */
export function writeFile(path: PathOrFd, data: WriteFileData, callback: WriteFileCallback): void
export function writeFile(path: PathOrFd, data: WriteFileData, options: BufferEncoding | WriteFileOptions | null | undefined, callback: WriteFileCallback): void
export function writeFile(path: PathOrFd, data: WriteFileData, options?: BufferEncoding | WriteFileOptions | null): Promise<void>
/** Appends to a file, like `fs.appendFile` (flag 'a'); each call's bytes land whole. */
export function appendFile(path: PathOrFd, data: WriteFileData, callback: WriteFileCallback): void
export function appendFile(path: PathOrFd, data: WriteFileData, options: BufferEncoding | WriteFileOptions | null | undefined, callback: WriteFileCallback): void
export function appendFile(path: PathOrFd, data: WriteFileData, options?: BufferEncoding | WriteFileOptions | null): Promise<void>

/** `fs.unlink`, `fs.rename` and `fs.mkdir` on fairfs's pool, with node:fs's results and errors
 *  (`mkdir` with `recursive`, the node backend and Windows: node:fs's own). */
export const unlink: typeof import('node:fs').unlink
export const rename: typeof import('node:fs').rename
export const mkdir: typeof import('node:fs').mkdir
/** `fs.copyFile` on fairfs's pool, a chunk per step (node:fs's own on the node backend and Windows). */
export const copyFile: typeof import('node:fs').copyFile

/** The promise API, like `fs.promises`: a FileHandle is accepted, a plain fd is not. */
export const promises: {
  readFile(path: PathLike | FileHandle, options: BufferEncoding | (ReadFileOptions & { encoding: BufferEncoding })): Promise<string>
  readFile(path: PathLike | FileHandle, options?: (ReadFileOptions & { encoding?: null }) | null): Promise<Buffer>
  /** `fs.promises.stat` on fairfs's pool (node:fs's own on the node backend and on Windows). */
  stat: typeof import('node:fs/promises').stat
  lstat: typeof import('node:fs/promises').lstat
  access: typeof import('node:fs/promises').access
  realpath: typeof import('node:fs/promises').realpath
  readdir: typeof import('node:fs/promises').readdir
  /** `fs.promises.unlink`, `rename` and `mkdir` on fairfs's pool (`recursive`: node:fs's own). */
  unlink: typeof import('node:fs/promises').unlink
  rename: typeof import('node:fs/promises').rename
  mkdir: typeof import('node:fs/promises').mkdir
  copyFile: typeof import('node:fs/promises').copyFile
  /** `fs.promises.writeFile` on fairfs's pool; (async) iterables and streams go to node:fs's. */
  writeFile: typeof import('node:fs/promises').writeFile
  appendFile: typeof import('node:fs/promises').appendFile
}

/** `fs.stat`, `fs.lstat` and `fs.access` on fairfs's pool, with node:fs's results and errors
 *  (node:fs's own on the node backend and on Windows). */
export const stat: typeof import('node:fs').stat
export const lstat: typeof import('node:fs').lstat
export const access: typeof import('node:fs').access
export const readdir: typeof import('node:fs').readdir

export interface ReadStreamOptions {
  flags?: string | number
  encoding?: BufferEncoding | null
  fd?: number | FileHandle
  mode?: number
  autoClose?: boolean
  emitClose?: boolean
  start?: number
  /** Inclusive. */
  end?: number
  highWaterMark?: number
  signal?: AbortSignal
  /** Blocks read ahead on the pool (1..64, default from configure()). */
  readAhead?: number
}

/** An `fs.ReadStream`-compatible Readable (also `instanceof fs.ReadStream`). */
export class ReadStream extends Readable {
  constructor(path: PathLike | null, options?: BufferEncoding | ReadStreamOptions)
  bytesRead: number
  path: string | Buffer
  fd: number | null
  readonly pending: boolean
  autoClose: boolean
  start: number | undefined
  end: number
  close(callback?: (err?: NodeJS.ErrnoException | null) => void): void
}

export function createReadStream(path: PathLike | null, options?: BufferEncoding | ReadStreamOptions): ReadStream & FsReadStream

export interface ConfigureOptions {
  /** Pool threads, 1..1024 (default 4). */
  threads?: number
  /** Bytes per chunk and DRR quantum, 4 KiB..64 MiB (default 512 KiB). */
  chunkSize?: number
  /** Cap on memory the buffer pool keeps, 0..2^53-1 (default 64 MiB). More lets V8 collect less
   *  often when many big reads overlap, for more memory. */
  maxPooledBytes?: number
  /** Default read-ahead of streams, 1..64 (default 4). */
  readAhead?: number
  /** Nice value of pool threads, -20..19 (default 5; Linux). */
  nice?: number
  /** The most files over one chunk read at once, 0..1024; 0 = the default, the pool's threads.
   *  Below it the limit adapts: every thread while nothing else wants the CPU, fewer while something does (Linux; elsewhere the cores minus one). */
  largeLimit?: number
  /** Largest result on this thread, 0..buffer.constants.MAX_LENGTH (the default); ERR_FS_FILE_TOO_LARGE past it. */
  maxLength?: number
  /** Largest result from a source of unknown size (a pipe, FIFO, device, /proc file) on this thread, 0..MAX_LENGTH (default 2 GiB - 1, every Node line). */
  maxUnsizedLength?: number
  /**
   * On local file systems (ext4, XFS, Btrfs, F2FS, tmpfs, and overlayfs over them; never
   * NFS, SMB, 9p or FUSE), read small, fully cached files on the calling thread without
   * blocking, open a stream's cached regular file, read its first block (up to 64 KiB)
   * and close it there too, and answer cached `stat`/`lstat` calls there (default true;
   * Linux 5.12+). For the whole process, worker_threads included; `FAIRFS_FAST_PATH=0`
   * in the environment turns it off from the start.
   */
  fastPath?: boolean
  /**
   * Under `install()`, a WriteStream keeps its next chunk queued on the pool behind the
   * write running, so the pool writes them back to back (default false: node:fs's
   * WriteStream, one write in flight). A chunk's callback, and `'drain'`, then come
   * before its bytes reach the kernel (the write ahead of it has); `'finish'` still
   * means every byte did, and a failed write still destroys the stream with node:fs's
   * error, though the callback that gets it may be a later chunk's.
   */
  writeBehind?: boolean
  /** Files the pool's reads hold open at once, 1..2^20 (default a quarter of RLIMIT_NOFILE, 4..1024); more wait. */
  maxOpenFiles?: number
  /** Bytes of big files' result buffers in flight, 0..2^53-1 (default 64 MiB); more wait, but one bigger file still goes alone. */
  maxBytesInFlight?: number
  /** The most workers the lanes of slow mounts hold together (NFS, SMB, FUSE, 9p: each
   *  such mount gets a pool of its own that grows while its requests wait, and goes
   *  back to 4 workers after an idle second; each keeps one past the cap), 1..1024
   *  (default 64). Lanes already bigger keep their workers until then. */
  laneThreads?: number
}

/** Changes the pool; invalid values throw and change nothing. On the node backend, nothing changes. */
export function configure(options: ConfigureOptions): void

/** stats() on the native backend. */
export interface NativeStats {
  backend: 'native'
  threads: number
  queued: number
  active: number
  /** Requests fairfs's pools delivered an outcome for (a result or an error): reads, a
   *  stream's opens, blocks and closes, writes, and metadata calls (stat, lstat, access,
   *  realpath, readdir) they answered, in the process-wide pool and in every lane
   *  (`lanes[].completed` is each lane's share). What the fast path answers on the
   *  calling thread is not counted here. */
  completed: number
  cancelled: number
  bytesRead: number
  /** Chunks of file data the pool read: each chunk of a read (the last one even if it
   *  found only the end). Metadata calls and closes read no file data and count none. */
  chunksRead: number
  /** Bytes whole-file writes wrote, and their steps (chunks, or whole appends) that wrote some. */
  bytesWritten: number
  chunksWritten: number
  chunkSize: number
  nice: number
  /** Big files read at once now: every thread while nothing else wants the CPU, down to one while
   *  other threads or processes, or a crowded event loop, do (Linux; elsewhere the cores minus one). */
  largeLimit: number
  /** The most it may reach: the threads, or `configure({ largeLimit })`. */
  largeLimitMax: number
  /** Whether it adapts (false where there is no signal: it stays at the cores minus one). */
  largeLimitAdaptive: boolean
  /** Times it went down because others wanted the CPU, and up because they did not. */
  largeBackoffs: number
  largeProbes: number
  /**
   * libuv's threads the governor tells apart from V8's (named by libuv 1.50+, or found
   * at load on older libuv): their use of the CPU brings the big-read limit to one.
   */
  libuvThreads: number
  /** Files held open by the pool's reads now, and the most allowed. */
  openFiles: number
  maxOpenFiles: number
  /** Bytes granted to big reads' result buffers now, and the most allowed. */
  bytesInFlight: number
  maxBytesInFlight: number
  /** Reads waiting for admission (an open-file slot, their bytes, or a close after EMFILE). */
  waiting: number
  /** Admitted big reads waiting for a Buffer their JS thread lends them (read straight into V8's memory). */
  awaitingMemory: number
  /** Reads of FIFOs, pipes and devices, each on a thread of its own outside the pool. */
  ownThreads: number
  /** Read streams whose blocks the pool's fair queue keeps as one flow; each is
   *  forgotten when its stream ends or is destroyed. */
  streamFlows: number
  readAhead: number
  maxLength: number
  maxUnsizedLength: number
  fastPath: boolean
  writeBehind: boolean
  /** `readFile`s and `stat`/`lstat`s the fast path served on the calling thread, and tries that went to the pool. */
  fastPathHits: number
  fastPathMisses: number
  /** Calling-thread calls that took over 1 ms (an on-access scanner, a stalled disk): each
   *  turns the fast paths off on that mount for a while (1 s, doubling up to a minute). */
  fastPathSlowCalls: number
  /** The buffer pool. `untoldBytes`: pooled memory lent to this thread's Buffers that
   *  V8 does not count now, because the pool still has stock (V8 is told once the
   *  pool runs short, so that it collects them). `abandonedBytes`: pooled memory given
   *  up for good because a worker_thread ended while another thread might still see it
   *  (its ArrayBuffer transferred out); it is never used again, and never freed.
   *  `waited`: buffers of 4 MiB and up that a read waited for (at most 5 ms) as they
   *  came back from collected Buffers, instead of allocating fresh memory. */
  pool: {
    hits: number
    misses: number
    pooledBytes: number
    outstanding: number
    maxPooledBytes: number
    untoldBytes: number
    abandonedBytes: number
    waited: number
  }
  /** One per mount whose calls wait on a server or daemon (NFS, SMB, FUSE, 9p) that
   *  fairfs has used: its id and mount point, its workers, and its requests waiting,
   *  running (on a slow mount, mostly blocked there) and completed. */
  lanes: Array<{ mountId: number; mountPoint: string; threads: number; queued: number; active: number; completed: number }>
}

/** stats() on the node backend (node:fs): no pool, so no counters. */
export interface NodeStats {
  backend: 'node'
  /** node:fs's own limit on a result (2 GiB - 1); configure({ maxLength }) does not change it. */
  maxLength: number
  /** The last valid value of each option given to configure(); none has an effect on this backend. */
  configured: ConfigureOptions
}

/** Tell the two apart with `backend`. */
export type Stats = NativeStats | NodeStats

export function stats(): Stats

/** Patches `fs.readFile`, `fs.createReadStream`, `fs.stat`, `fs.lstat`, `fs.access`, `fs.readdir`, `fs.realpath.native`, their `fs.promises` forms and FileHandle's `readFile`, `createReadStream` and `stat`; on Node 20 and 22 callback `fs.realpath` too (Node 24's walk, which does not read node:fs's shared stat array). Idempotent. Does nothing on the node backend. */
export function install(): void
/** Restores what `install()` replaced. */
export function uninstall(): void
/** Whether node:fs is patched (always false on the node backend). */
export function isInstalled(): boolean

declare const fairfs: {
  backend: typeof backend
  nativeError: typeof nativeError
  readFile: typeof readFile
  readFiles: typeof readFiles
  writeFile: typeof writeFile
  appendFile: typeof appendFile
  unlink: typeof unlink
  rename: typeof rename
  mkdir: typeof mkdir
  copyFile: typeof copyFile
  stat: typeof stat
  lstat: typeof lstat
  access: typeof access
  readdir: typeof readdir
  promises: typeof promises
  createReadStream: typeof createReadStream
  ReadStream: typeof ReadStream
  configure: typeof configure
  stats: typeof stats
  install: typeof install
  uninstall: typeof uninstall
  isInstalled: typeof isInstalled
}
export default fairfs
