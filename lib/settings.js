'use strict'
// The settings configure() sets and stats() reports, in one place: the checks both
// backends share (so that a bad value gets the same error whichever runs), the limits
// node:fs itself fixes, and the values the JS side keeps for this thread. index.d.ts
// (ConfigureOptions, NativeStats) says what each option does; docs/tuning.md why each
// default has its value.

const { constants: { MAX_LENGTH } } = require('node:buffer')
const { invalidArgType, outOfRange } = require('./errors')

/**
 * node:fs's kIoMaxLength (2 GiB - 1): the most one read may ask for, node:fs's own
 * bound on a readFile result, and fairfs's default bound on a source of unknown size
 * (the addon's DEFAULT_MAX_UNSIZED_LENGTH, src/read.rs, is the same).
 */
const kIoMaxLength = 2 ** 31 - 1

/** A file, or a stream's first block, up to this size may be read on the calling thread when fully cached. */
const kFastPathMax = 64 * 1024

/** What the JS side of this thread uses now; configure() changes it, stats() reports it. */
const current = {
  /** Blocks a read stream reads ahead unless its options say otherwise. */
  readAhead: 4,
  /** Small cached files are read on the calling thread (src/cached.rs); for the whole
   *  process on the native backend (lib/native-api.js makes this the addon's). */
  fastPath: true,
  /** The largest result; ERR_FS_FILE_TOO_LARGE past it. */
  maxLength: MAX_LENGTH,
  /** The largest result from a source of unknown size (a pipe, FIFO, device). */
  maxUnsizedLength: kIoMaxLength,
  /** Under install(), a WriteStream queues its next chunk behind the write running,
   *  and calls back before it reaches the kernel (lib/write-stream.js). */
  writeBehind: false,
}

const kMaxChunkSize = 64 * 1024 * 1024
const kMaxThreads = 1024
const kMaxReadAhead = 64
/** Admission's open-file limit: at most 2^20, the usual hard RLIMIT_NOFILE. */
const kMaxOpenFiles = 1 << 20

function checkInteger(name, value, min, max) {
  if (typeof value !== 'number') throw invalidArgType(name, 'of type number', value)
  if (!Number.isInteger(value) || value < min || value > max) {
    throw outOfRange(name, `an integer >= ${min} && <= ${max}`, value)
  }
}

/**
 * Checks configure()'s options and returns the ones it knows (undefined where not
 * given). Throws for the first invalid value, having changed nothing.
 */
function validateConfigure(options = {}) {
  if (options === null || typeof options !== 'object') throw invalidArgType('options', 'of type object', options)
  const { threads, chunkSize, maxPooledBytes, readAhead, nice, maxLength, maxUnsizedLength, largeLimit, fastPath, maxOpenFiles, maxBytesInFlight, laneThreads, writeBehind } = options
  if (fastPath !== undefined && typeof fastPath !== 'boolean') throw invalidArgType('options.fastPath', 'of type boolean', fastPath)
  if (writeBehind !== undefined && typeof writeBehind !== 'boolean') throw invalidArgType('options.writeBehind', 'of type boolean', writeBehind)
  if (threads !== undefined) checkInteger('options.threads', threads, 1, kMaxThreads)
  if (chunkSize !== undefined) checkInteger('options.chunkSize', chunkSize, 4096, kMaxChunkSize)
  if (maxPooledBytes !== undefined) checkInteger('options.maxPooledBytes', maxPooledBytes, 0, Number.MAX_SAFE_INTEGER)
  if (readAhead !== undefined) checkInteger('options.readAhead', readAhead, 1, kMaxReadAhead)
  if (nice !== undefined) checkInteger('options.nice', nice, -20, 19)
  if (maxLength !== undefined) checkInteger('options.maxLength', maxLength, 0, MAX_LENGTH)
  if (maxUnsizedLength !== undefined) checkInteger('options.maxUnsizedLength', maxUnsizedLength, 0, MAX_LENGTH)
  if (largeLimit !== undefined) checkInteger('options.largeLimit', largeLimit, 0, kMaxThreads)
  if (maxOpenFiles !== undefined) checkInteger('options.maxOpenFiles', maxOpenFiles, 1, kMaxOpenFiles)
  if (maxBytesInFlight !== undefined) checkInteger('options.maxBytesInFlight', maxBytesInFlight, 0, Number.MAX_SAFE_INTEGER)
  if (laneThreads !== undefined) checkInteger('options.laneThreads', laneThreads, 1, kMaxThreads)
  return { threads, chunkSize, maxPooledBytes, readAhead, nice, maxLength, maxUnsizedLength, largeLimit, fastPath, maxOpenFiles, maxBytesInFlight, laneThreads, writeBehind }
}

module.exports = { validateConfigure, current, kIoMaxLength, kFastPathMax }
