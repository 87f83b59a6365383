'use strict'
// Event-loop turns: all fairfs streams together push at most kTurnBudget bytes in one
// turn of the event loop, past which a stream waits for the next turn (setImmediate,
// after the loop has polled for I/O); but every stream may push its first chunk of a
// turn, so a small file's stream never waits behind big ones. Pool results arrive
// faster than sockets take them, and without a budget a few big downloads kept the
// event loop busy pushing bytes while small requests waited (benches/js/server.mjs).
//
// A chunk costs the event loop about the same whatever its size (the stream's
// machinery, the socket's write and its callback, the garbage), so big streams are
// also held to chunks: while two or more streams past their first kLongAfter bytes
// are reading, those together push at most kLongChunksPerTurn chunks a turn (what four
// downloads of 64 KiB chunks push on plain http anyway), which keeps small requests'
// p99 near node:fs's (docs/tuning.md). A lone stream, and short ones (small files),
// are not held.
const kTurnBudget = 256 * 1024
const kLongAfter = 1024 * 1024
const kLongChunksPerTurn = 4
let turnBytes = 0
let turn = 0
let turnEnds = false
/** Chunks long streams pushed this turn. */
let turnLongChunks = 0
/** Streams past their first kLongAfter bytes that have not finished reading. */
const longStreams = new Set()
/** Streams waiting for the next turn to push on. */
const waitingForTurn = new Set()

/**
 * Whether `stream`, which last pushed in turn `lastTurn` and has read `bytesRead`
 * bytes, may push a chunk now: the current turn's number if so; if not, -1, and the
 * stream's `_pushOn()` is called when the next turn comes.
 */
function admit(stream, lastTurn, bytesRead) {
  const long = bytesRead >= kLongAfter
  const held = long && turnLongChunks >= kLongChunksPerTurn && longStreams.size >= 2
  if ((turnBytes >= kTurnBudget && lastTurn === turn) || held) {
    waitingForTurn.add(stream)
    return -1
  }
  if (long) turnLongChunks++
  return turn
}

/** `stream` pushed a chunk of `bytes`, and has now read `bytesRead` in all. */
function spent(stream, bytes, bytesRead) {
  // Long from the chunk that completes its first kLongAfter bytes.
  if (bytesRead >= kLongAfter) longStreams.add(stream)
  turnBytes += bytes
  if (!turnEnds) {
    turnEnds = true
    setImmediate(nextTurn)
  }
}

/** `stream` reads no more: it no longer counts among the long ones. */
function finished(stream) {
  longStreams.delete(stream)
}

function nextTurn() {
  turnEnds = false
  turnBytes = 0
  turnLongChunks = 0
  turn++
  const streams = [...waitingForTurn]
  waitingForTurn.clear()
  for (const s of streams) s._pushOn()
}

module.exports = { admit, spent, finished }
