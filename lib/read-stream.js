'use strict'
// createReadStream: an fs.ReadStream-compatible Readable whose chunks are read
// ahead on fairfs's pool, into pooled memory that reaches JS without a copy.
//
// The stream keeps up to `readAhead` chunk reads in flight (one, when reading at
// the fd's current position) and pushes results in order. When push() reports a
// full buffer it issues no more reads until _read() asks again, so a paused stream
// stops reading ahead.

const { Readable, finished } = require('node:stream')
const { AsyncResource } = require('node:async_hooks')
const { Buffer } = require('node:buffer')
const { fileURLToPath } = require('node:url')
const { binding, track, nativeError } = require('./native')
// Taken before install() patches node:fs.
const { ReadStream: NodeReadStream } = require('node:fs')
/** node's own ReadStream.prototype.open: any other means a caller patched it (DEP0135). */
const nodeOpen = NodeReadStream.prototype.open
const { getOptions, copyOptions, stringToFlags, validatePath, validateInteger, validateFd, isFileHandle } = require('./args')
const { hold } = require('./filehandle')
const { outOfRange } = require('./errors')
const { current: settings, kIoMaxLength, kFastPathMax } = require('./settings')
const { replaced, replacedRead, readThrough, openPatched } = require('./replaced-fs')
const { nodeServes } = require('./mocked')
const { openCached, readCached } = require('./stream-fast-path')
const turns = require('./turns')

/** Turn scopes emit their async_hooks destroy once used, as a request's do (lib/native.js). */
const kManualDestroy = { requireManualDestroy: true }

/** node:fs's default highWaterMark for file streams. */
const kDefaultHighWaterMark = 64 * 1024

// A positioned read fetches up to kBlockChunks highWaterMark chunks at once, within
// [kMinBlock, kMaxBlock] bytes. A kept chunk keeps its whole block alive, so the
// block stays small relative to the chunks.
const kBlockChunks = 16
const kMinBlock = 64 * 1024
const kMaxBlock = 1024 * 1024

/** Bytes per positioned read for chunks of `hwm` bytes: a whole number of chunks. */
function blockSize(hwm) {
  if (hwm === 0) return 0
  return hwm * Math.max(1, Math.floor(Math.min(kMaxBlock, Math.max(kMinBlock, hwm * kBlockChunks)) / hwm))
}

/**
 * A finished block as #drain takes it: its chunks (each a Buffer of its own) and their
 * total length, counted now; or the error (`null`: cancelled).
 */
function arrived(result, position, size) {
  // A native error is an array too, of numbers and strings ([errno, syscall]).
  const isChunks = Array.isArray(result) && (result.length === 0 || Buffer.isBuffer(result[0]))
  if (!isChunks) return { error: result, chunks: [], length: 0, next: 0, position, size }
  let length = 0
  for (const chunk of result) length += chunk.length
  return { error: undefined, chunks: result, length, next: 0, position, size }
}

class ReadStream extends Readable {
  #readAhead
  /** Bytes per positioned read: several highWaterMark chunks, so one trip through
   *  the pool and back serves many pushes. */
  #blockSize
  /** Chunks are read at explicit positions (so several can be in flight). */
  #positional
  /** Positional because we opened the file ourselves, not because of `start`:
   *  falls back to reading at the current position if the file cannot seek. */
  #implicitPosition
  #nextPos = 0
  /** Sequence numbers of the next chunk to issue and the next to push. */
  #seqNext = 0
  #seqPush = 0
  /** Bumped to discard chunks issued before a short read or a mode switch. */
  #gen = 0
  /** Finished chunks of the current generation waiting for their turn. */
  #ready = new Map()
  /** Chunk reads of the current generation in flight. */
  #live = 0
  /** Native ids of every request in flight (any generation), for destroy(). */
  #ids = new Set()
  #afterIo = null
  #wantMore = false
  #noMore = false
  #ended = false
  /** The next read may be answered on this thread from the page cache
   *  (lib/stream-fast-path.js): a stream's first read, and the read after a short one
   *  that tells whether the file ended. */
  #cachedNext = true
  /** A read answered on this thread is on its way: it goes alone, since for a small
   *  file it is the whole file and read-ahead would only find its end again. */
  #cachedInFlight = false
  /** The open in flight, which destroy() cancels: Readable waits for _construct
   *  before it calls _destroy, and an open of a FIFO waits for a writer. */
  #openId = null
  /** The event-loop turn in which it last pushed. */
  #turn = -1
  /** The key that makes this stream's blocks one flow in the pool's fair queue. */
  #flow = 0
  /** A push deferred out of a synchronous _read() is queued. */
  #pushQueued = false
  /** Waiting for the next turn (turns.js): the async context to push in then. */
  #turnScope = null

  constructor(path, options) {
    // A custom `fs` (memfs and the like) is called for open, read and close: node's own
    // stream does that, so such a stream is node's. So is one that must share fds with
    // node:fs on Windows (see nodeFdsOnWindows), and every stream while node:fs's
    // binding is mocked (lib/mocked.js).
    const object = options != null && typeof options === 'object'
    if ((object && options.fs != null) || nodeServes() || nodeFdsOnWindows(object ? options : {}, new.target)) {
      return new NodeReadStream(path, options)
    }
    // Inherited options count, as node:fs copies them with a for-in loop.
    options = copyOptions(getOptions(options))
    if (options.highWaterMark === undefined) options.highWaterMark = kDefaultHighWaterMark
    if (options.autoDestroy === undefined) options.autoDestroy = options.autoClose === undefined ? true : options.autoClose
    // Validate before Readable's constructor schedules _construct.
    let nativePath = null
    const handle = options.fd != null && isFileHandle(options.fd) ? options.fd : null
    if (options.fd == null) {
      path = path instanceof URL ? fileURLToPath(path) : path
      nativePath = validatePath(path)
    } else if (!handle) {
      validateFd(options.fd)
    }
    const { start, end = Infinity } = options
    if (start !== undefined) validateInteger(start, 'start', 0)
    if (end !== Infinity) {
      validateInteger(end, 'end', 0)
      if (start !== undefined && start > end) throw outOfRange('start', `<= "end" (here: ${end})`, start)
    }
    const readAhead = options.readAhead ?? settings.readAhead
    validateInteger(readAhead, 'options.readAhead', 1, 64)
    super(options)
    this._nativePath = nativePath
    this._handle = handle
    if (handle) handle.on?.('close', () => this.close())
    if (options.fd == null) {
      this.fd = null
      this.path = path
      this.flags = options.flags === undefined ? 'r' : options.flags
      this.mode = options.mode === undefined ? 0o666 : options.mode
    } else {
      this.fd = handle ? handle.fd : options.fd
    }
    this.start = start
    this.end = end
    this.pos = start
    this.bytesRead = 0
    this.#readAhead = readAhead
    this.#blockSize = blockSize(this.readableHighWaterMark)
    this.#implicitPosition = start === undefined && this.fd === null
    this.#positional = start !== undefined || this.#implicitPosition
    this.#nextPos = start ?? 0
    // Readable's constructor destroys at once for a signal aborted already, before
    // this stream's fields existed: finish that destroy now.
    const early = this._destroyedEarly
    if (early) {
      delete this._destroyedEarly
      this.#destroyedAtStart = true
      this._destroy(...early)
    }
  }

  get pending() {
    return this.fd === null
  }

  get autoClose() {
    return this._readableState.autoDestroy
  }

  set autoClose(value) {
    this._readableState.autoDestroy = value
    if (!value) this.#forgetFd()
  }

  /** The fd we opened is no longer ours to close, even when the thread exits. */
  #forgetFd() {
    if (#ownFd in this && this.#ownFd && typeof this.fd === 'number') binding.forgetFd(this.fd)
    if (#ownFd in this) this.#ownFd = false
  }

  /** Whether this stream's fd is one the native side opened and will close at teardown. */
  #ownFd = false
  /** The fd was opened on this thread (openCached): a regular file on a local file
   *  system, which closeCached may close here too. */
  #openedHere = false

  /** Readable's constructor destroyed the stream (a signal aborted already). */
  #destroyedAtStart = false

  _construct(callback) {
    // A signal aborted before the start: nothing to open (node:fs opens the file then
    // and never closes it). A stream destroyed later, even before this runs, still
    // opens, emits 'open' and 'ready' (or the open's error), then closes, as node:fs's.
    if (typeof this.fd === 'number' || this.#destroyedAtStart) return callback()
    if (this.open !== nodeOpen) return openPatched(this, callback)
    const open = replaced('open')
    if (open) {
      return open(this.path, this.flags, this.mode, (err, fd) => {
        if (err) return callback(err)
        this.fd = fd
        callback()
        this.emit('open', fd)
        this.emit('ready')
      })
    }
    const flags = stringToFlags(this.flags)
    const fd = settings.fastPath ? openCached(this._nativePath.native, flags) : null
    if (fd !== null) {
      this.#ownFd = true
      this.#openedHere = true
      setImmediate(() => {
        this.fd = fd
        if (!this.autoClose) this.#forgetFd()
        callback()
        this.emit('open', fd)
        this.emit('ready')
      })
      return
    }
    let id
    try {
      id = binding.openPath(this._nativePath.native, flags, this.mode)
    } catch (err) {
      return callback(err)
    }
    this.#ids.add(id)
    this.#openId = id
    track(id, (result) => {
      this.#ids.delete(id)
      this.#openId = null
      // Cancelled by destroy() (a FIFO waiting for its writer): nothing was opened.
      if (result === null) return callback()
      if (typeof result !== 'number') return callback(nativeError(result, this._nativePath.display))
      this.fd = result
      this.#ownFd = true
      if (!this.autoClose) this.#forgetFd()
      callback()
      this.emit('open', this.fd)
      this.emit('ready')
    })
  }

  _read() {
    const hwm = this.readableHighWaterMark
    if (hwm === 0) {
      // node:fs reads min(highWaterMark, what is left) bytes: none, so it ends here.
      this.#noMore = true
    } else if (hwm > kIoMaxLength && !this.#noMore) {
      this.#fail(outOfRange('options.highWaterMark', `>= 0 && <= ${kIoMaxLength}`, hwm))
      return
    }
    this.#wantMore = true
    // Readable calls _read() from inside read(). A chunk pushed there would be joined
    // to the one read() is about to return in paused mode (async iteration,
    // 'readable'): a copy, and a chunk larger than highWaterMark; in flowing mode it
    // would sit in the buffer and still be emitted after a destroy() from a 'data'
    // handler. node:fs's reads are asynchronous, so push on the next tick.
    this.#pushLater()
    this.#pump()
  }

  #pushLater() {
    if (this.#pushQueued || !this.#ready.has(this.#seqPush)) return
    this.#pushQueued = true
    process.nextTick(() => {
      const state = this._readableState
      if (!state.flowing && state.length > 0) {
        // Readable reading ahead (read(0)) while a chunk still waits: the consumer
        // takes it first (its promise resolves after this tick), then we push.
        setImmediate(() => {
          this.#pushQueued = false
          this.#pushOn()
        })
        return
      }
      this.#pushQueued = false
      this.#pushOn()
    })
  }

  /** Issues chunk reads while the consumer wants data and read-ahead allows. */
  #pump() {
    if (this.destroyed || this.#ended) return
    // A replaced read is called as node:fs calls it: one highWaterMark at a time.
    const theirRead = replacedRead(this)
    const limit = this.#positional && !theirRead ? this.#readAhead : 1
    // Blocks that finished out of order and wait for their turn count too.
    while (this.#wantMore && !this.#noMore && !this.#cachedInFlight && this.#live + this.#ready.size < limit) {
      // At the current position only one read is in flight, so bytesRead is exact.
      const remaining = this.end - (this.#positional ? this.#nextPos : this.bytesRead) + 1
      const block = this.#positional && !theirRead ? this.#blockSize : this.readableHighWaterMark
      let size = Math.min(block, remaining)
      if (size <= 0) {
        this.#noMore = true
        break
      }
      let mayCache = this.#cachedNext && this.#positional && !theirRead && settings.fastPath && !this._handle
      if (mayCache && size > kFastPathMax) {
        // A stream with no end (koa-send's) asks for as many whole chunks as the fast
        // path reads, not a whole block: a small file is then read here in one go.
        const whole = Math.floor(kFastPathMax / this.readableHighWaterMark) * this.readableHighWaterMark
        if (whole > 0) size = whole
        else mayCache = false
      }
      this.#cachedNext = false
      this.#issue(size, theirRead, mayCache)
    }
    if (this.#noMore && this.#live === 0 && this.#ready.size === 0) {
      this.#ended = true
      this.#endFlow()
      this.push(null)
    }
  }

  #issue(size, theirRead, mayCache) {
    const seq = this.#seqNext++
    const gen = this.#gen
    const position = this.#positional ? this.#nextPos : -1
    if (this.#positional) this.#nextPos += size
    this.#live++
    // A FileHandle's close() waits for this read, as for node's own (lib/filehandle.js).
    const release = this._handle && !theirRead ? hold(this._handle) : null
    let id
    let cached = null
    const done = (result) => {
      release?.()
      this.#ids.delete(id)
      if (gen === this.#gen) this.#live--
      if (this.#ids.size === 0 && this.#afterIo) {
        const then = this.#afterIo
        this.#afterIo = null
        then()
      }
      if (this.destroyed || gen !== this.#gen) return
      this.#ready.set(seq, arrived(result, position, size))
      this.#drain()
      this.#pump()
    }
    if (theirRead) {
      // Counted with the pool's requests in flight, so that close waits for it too.
      id = {}
      this.#ids.add(id)
      readThrough(theirRead, size, position, done)
    } else if (mayCache && position >= 0 &&
      (cached = readCached(this.fd, position, size, this.readableHighWaterMark)) !== null) {
      // In the page cache: read here (lib/stream-fast-path.js), delivered as a macrotask.
      id = {}
      this.#ids.add(id)
      this.#cachedInFlight = true
      setImmediate(() => {
        if (gen === this.#gen) this.#cachedInFlight = false
        done(cached)
      })
    } else {
      // Pooled memory, copied out when small and lent to JS when not. A lent block is
      // kept from V8's count while the pool has stock (src/external_memory.rs), so
      // blocks a slow reader holds across young collections start a mark-compact only
      // once the pool needs them back; V8's own memory would count towards one at once
      // (ARCHITECTURE.md, "Stream blocks"). The first block (most small files' only
      // one) needs no flow of its own.
      if (this.#flow === 0 && seq > 0) this.#flow = binding.newFlow()
      id = binding.readChunk(this.fd, position, size, this.#flow, this.readableHighWaterMark)
      this.#ids.add(id)
      track(id, done)
    }
  }

  /** Starts a new generation: chunks in flight or waiting are discarded. */
  #restart(nextPos) {
    this.#gen++
    this.#ready.clear()
    this.#live = 0
    this.#seqNext = this.#seqPush
    this.#nextPos = nextPos
    this.#noMore = false
    this.#cachedInFlight = false
  }

  /**
   * Pushes finished blocks in order, a highWaterMark-sized chunk at a time, until
   * push() reports a full buffer; the rest of a block waits for the next _read, so one
   * block never floods the event loop with its whole content in one tick. A block's
   * length was taken when it arrived: what a consumer does with a pushed chunk
   * (transfer its memory, say) changes nothing about what comes next.
   */
  #drain() {
    while (this.#wantMore && this.#ready.has(this.#seqPush)) {
      const block = this.#ready.get(this.#seqPush)
      const { chunks, length, error, position, size } = block
      if (error === null) return // cancelled: only happens while destroying
      if (error !== undefined) {
        this.#ready.delete(this.#seqPush++)
        const err = error instanceof Error ? error : nativeError(error)
        if (this.#implicitPosition && err.code === 'ESPIPE') {
          // A pipe or device opened by path: read at its current position instead.
          this.#positional = false
          this.#implicitPosition = false
          this.#restart(0)
          return
        }
        this.#fail(err)
        return
      }
      if (length === 0) {
        this.#ready.delete(this.#seqPush++)
        this.#restart(this.#nextPos)
        this.#noMore = true
        return
      }
      while (block.next < chunks.length && this.#wantMore) {
        const now = turns.admit(this, this.#turn, this.bytesRead)
        if (now < 0) {
          // Queued: turns.js calls _pushOn() next turn, from a setImmediate made in
          // the context of whichever stream first pushed in this turn; it pushes in
          // this stream's own, where node:fs's read callback would push this chunk.
          this.#turnScope ??= new AsyncResource('FAIRFS_STREAM_TURN', kManualDestroy)
          return
        }
        this.#turn = now
        const chunk = chunks[block.next]
        chunks[block.next++] = undefined
        const n = chunk.length
        this.bytesRead += n
        if (this.pos !== undefined) this.pos += n
        turns.spent(this, n, this.bytesRead)
        // One push per _read(), as node:fs: more pushed at once would wait in the
        // buffer together (highWaterMark counts characters once decoded) and come
        // out of read() joined. Except in flowing mode into an empty buffer: there
        // push() emits 'data' at once (this never runs inside read()), so the next
        // chunk may follow without a trip through _read().
        const more = this.push(chunk)
        const state = this._readableState
        this.#wantMore = more && state.flowing && state.length === 0 && !this.destroyed
      }
      if (block.next < chunks.length) return
      this.#ready.delete(this.#seqPush++)
      if (this.#positional && length < size) {
        // Later chunks were asked for past what the file held then; read on from
        // here, as node:fs does (the file may be growing).
        this.#restart(position + length)
        this.#cachedNext = true
        return
      }
    }
  }

  #endFlow() {
    if (this.#flow !== 0) binding.endFlow(this.#flow)
    this.#flow = 0
    turns.finished(this)
  }

  /** The next event-loop turn has come (turns.js): push what waited for it. */
  _pushOn() {
    const scope = this.#turnScope
    if (scope === null) return this.#pushOn()
    this.#turnScope = null
    try {
      scope.runInAsyncScope(this.#pushOn, this)
    } finally {
      scope.emitDestroy()
    }
  }

  #pushOn() {
    if (this.destroyed) return
    this.#drain()
    this.#pump()
  }

  #fail(err) {
    this.#noMore = true
    if (this._readableState.autoDestroy) this.destroy(err)
    else this.emit('error', err)
  }

  destroy(err, callback) {
    if (#openId in this && this.#openId !== null) binding.cancel(this.#openId)
    return super.destroy(err, callback)
  }

  _destroy(err, callback) {
    if (!(#ids in this)) {
      // Called from Readable's constructor (see the end of ours).
      this._destroyedEarly = [err, callback]
      return
    }
    this.#endFlow()
    for (const id of this.#ids) if (typeof id === 'number') binding.cancel(id)
    // As node:fs does, wait for reads in flight before closing the fd.
    if (this.#ids.size > 0) this.#afterIo = () => this.#close(err, callback)
    else this.#close(err, callback)
  }

  #close(err, callback) {
    if (this._handle) {
      const handle = this._handle
      this._handle = null
      this.fd = null
      return handle.close().then(() => callback(err), (er) => callback(er || err))
    }
    if (typeof this.fd !== 'number') return callback(err)
    const close = replaced('close')
    if (close) {
      this.#forgetFd()
      close(this.fd, (er) => callback(er || err))
      this.fd = null
      return
    }
    const fd = this.fd
    this.#ownFd = false
    this.fd = null
    const closed = this.#openedHere ? binding.closeCached(fd) : false
    if (closed !== false) {
      // Closed here, as it was opened; the outcome still comes as a macrotask.
      setImmediate(callback, closed === true ? err : err || nativeError(closed))
      return
    }
    const id = binding.closeFd(fd)
    track(id, (result) => callback(result === undefined ? err : err || nativeError(result)))
  }

  close(callback) {
    if (typeof callback === 'function') finished(this, callback)
    this.destroy()
  }
}

// Instances are also `instanceof fs.ReadStream`, for code that checks (our methods
// shadow fs.ReadStream's; Readable stays the base the constructor calls).
Object.setPrototypeOf(ReadStream.prototype, require('node:fs').ReadStream.prototype)

const kWindows = process.platform === 'win32'

/**
 * Whether, on Windows, a stream's fd must be one node:fs can use, which the addon's
 * cannot be: each links its own C runtime, and an fd is an index into one of them
 * (see kForeignFds in native-api.js). So it is for a caller's fd or FileHandle
 * (`options.fd`), and for a stream whose open, read or close node:fs's code does: an
 * fs.open, fs.read or fs.close a caller replaced (each given the fd of the others),
 * or a patched ReadStream.prototype.open (DEP0135), which opens with fs.open. Such
 * a stream is node:fs's own, which calls them as it always does. `target` is the
 * class constructed (ours or a subclass).
 */
function nodeFdsOnWindows(options, target) {
  if (!kWindows) return false
  if (options.fd != null) return true
  return target.prototype.open !== nodeOpen || replaced('open') !== null || replaced('read') !== null || replaced('close') !== null
}

/**
 * Like `fs.createReadStream`: a Readable over the file, with node:fs's options
 * (`flags`, `encoding`, `fd`, `mode`, `autoClose`, `emitClose`, `start`, `end`,
 * `highWaterMark`, `signal`) plus `readAhead`, the chunks read ahead (default 4).
 */
function createReadStream(path, options) {
  return new ReadStream(path, options)
}

module.exports = { ReadStream, createReadStream }
