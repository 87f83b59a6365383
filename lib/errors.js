'use strict'
// Errors built exactly as node:fs builds them: same class, `code`, message and
// own properties, so code that inspects node:fs errors works unchanged.

const { inspect } = require('node:util')
const { join } = require('node:path')
const { Buffer } = require('node:buffer')
const { startupSnapshot } = require('node:v8')

/** Sets `code` and shows it in the stack header the way Node's internal errors do. */
function withCode(err, code) {
  err.code = code
  if (typeof err.stack === 'string') {
    err.stack = err.stack.replace(/^[^\n:]*/, `${err.name} [${code}]`)
  }
  return err
}

/**
 * How this Node describes a received value in ERR_INVALID_ARG_TYPE messages. The
 * wording changes between Node lines (functions, long strings), so it is taken from
 * Node itself: the same value passed to a Node API that rejects it with this error.
 */
function describeReceived(value) {
  try {
    if (typeof value === 'string') Buffer.alloc(value)
    else join(value)
  } catch (err) {
    const at = typeof err?.message === 'string' ? err.message.indexOf('. Received ') : -1
    if (err?.code === 'ERR_INVALID_ARG_TYPE' && at !== -1) return err.message.slice(at + 2)
  }
  return ownDescription(value)
}

/** Node 20-24's wording, for a value the probe above does not reject. */
function ownDescription(value) {
  if (value == null) return `Received ${value}`
  if (typeof value === 'function') return `Received function ${value.name}`
  if (typeof value === 'object') {
    if (value.constructor?.name) return `Received an instance of ${value.constructor.name}`
    return `Received ${inspect(value, { depth: -1 })}`
  }
  let inspected = inspect(value, { colors: false })
  if (inspected.length > 28) inspected = `${inspected.slice(0, 25)}...`
  return `Received type ${typeof value} (${inspected})`
}

/** ERR_INVALID_ARG_TYPE; `expected` is Node's wording, e.g. 'of type string'. */
function invalidArgType(name, expected, value) {
  const kind = name.includes('.') ? 'property' : 'argument'
  return withCode(new TypeError(`The "${name}" ${kind} must be ${expected}. ${describeReceived(value)}`), 'ERR_INVALID_ARG_TYPE')
}

/** ERR_INVALID_ARG_VALUE, as Node words it. */
function invalidArgValue(name, value, reason = 'is invalid') {
  let inspected = inspect(value)
  if (inspected.length > 128) inspected = `${inspected.slice(0, 128)}...`
  const kind = name.includes('.') ? 'property' : 'argument'
  return withCode(new TypeError(`The ${kind} '${name}' ${reason}. Received ${inspected}`), 'ERR_INVALID_ARG_VALUE')
}

function outOfRange(name, range, value) {
  return withCode(new RangeError(`The value of "${name}" is out of range. It must be ${range}. Received ${received(value)}`), 'ERR_OUT_OF_RANGE')
}

/** How node's ERR_OUT_OF_RANGE shows the value: integers past 2^32 with separators. */
function received(value) {
  if (Number.isInteger(value) && Math.abs(value) > 2 ** 32) return withSeparators(String(value))
  if (typeof value === 'bigint') {
    const digits = String(value)
    return `${value > 2n ** 32n || value < -(2n ** 32n) ? withSeparators(digits) : digits}n`
  }
  return inspect(value)
}

/** '-1234567' -> '-1_234_567', as node's addNumericalSeparator. */
function withSeparators(digits) {
  const start = digits[0] === '-' ? 1 : 0
  let out = ''
  let i = digits.length
  for (; i >= start + 4; i -= 3) out = `_${digits.slice(i - 3, i)}${out}`
  return `${digits.slice(0, i)}${out}`
}

/** libuv's errors as this Node names them: errno -> [code, description]. */
let systemErrors

/**
 * A failed system call, from the native `[errno, syscall]`, where errno is libuv's
 * negative error number: the same error node:fs builds (its C++ `UVException`).
 * node:fs adds the path only to errors of calls that take one (`open` here).
 */
/** The syscalls whose errors node:fs gives a `path`. */
const kTakesPath = new Set(['open', 'stat', 'lstat', 'access', 'realpath', 'scandir', 'unlink', 'rename', 'mkdir', 'copyfile'])

/** `dest`: the second path of a call that takes two (rename), shown after ' -> '. */
function uvError([errno, syscall], path, dest) {
  systemErrors ??= require('node:util').getSystemErrorMap()
  // For a number libuv does not name, node:fs's code and text both come from
  // uv_err_name / uv_strerror: 'Unknown system error -116'.
  const unknown = `Unknown system error ${errno}`
  const [code, description] = systemErrors.get(errno) ?? [unknown, unknown]
  const withPath = kTakesPath.has(syscall) && path !== undefined
  const withDest = withPath && dest !== undefined
  // As node's uvException: no stack is captured here (2–3 µs a miss), the stack is the message.
  const limit = Error.stackTraceLimit
  const quiet = stackTraceLimitWritable()
  if (quiet) Error.stackTraceLimit = 0
  const err = new Error(`${code}: ${description}, ${syscall}${withPath ? ` '${path}'` : ''}${withDest ? ` -> '${dest}'` : ''}`)
  if (quiet) Error.stackTraceLimit = limit
  err.errno = errno
  err.code = code
  err.syscall = syscall
  if (withPath) err.path = path
  if (withDest) err.dest = dest
  // node:fs makes these errors in C++, outside any JS frame: its stack is the message.
  err.stack = `Error: ${err.message}`
  return err
}

/** node's isErrorStackTraceLimitWritable: whether Error.stackTraceLimit may be set for a while. */
function stackTraceLimitWritable() {
  if (startupSnapshot?.isBuildingSnapshot?.()) return false
  const desc = Object.getOwnPropertyDescriptor(Error, 'stackTraceLimit')
  if (desc === undefined) return Object.isExtensible(Error)
  return Object.prototype.hasOwnProperty.call(desc, 'writable') ? desc.writable : desc.set !== undefined
}

function formatLimit(bytes) {
  // node:fs's kIoMaxLength (2 GiB - 1) is "2 GiB" in its own messages.
  if (bytes === 2 ** 31 - 1) return '2 GiB'
  const gib = bytes / 2 ** 30
  return Number.isInteger(gib) ? `${gib} GiB` : `${bytes} bytes`
}

/**
 * ERR_FS_FILE_TOO_LARGE. node:fs stops at 2 GiB; fairfs reads up to
 * `buffer.constants.MAX_LENGTH`, so the message names that limit.
 */
function fileTooLarge(size, limit) {
  return withCode(new RangeError(`File size (${size}) is greater than ${formatLimit(limit)}`), 'ERR_FS_FILE_TOO_LARGE')
}

/** Node's AbortError: `name` 'AbortError', `code` 'ABORT_ERR', `cause` the signal's reason. */
class AbortError extends Error {
  constructor(message = 'The operation was aborted', options = undefined) {
    super(message, options)
    this.code = 'ABORT_ERR'
    this.name = 'AbortError'
  }
}

/** ERR_METHOD_NOT_IMPLEMENTED, as Node words it: `The <name> method is not implemented`. */
function methodNotImplemented(name) {
  return withCode(new Error(`The ${name} method is not implemented`), 'ERR_METHOD_NOT_IMPLEMENTED')
}

/**
 * A fairfs pool thread panicked while running this read (a bug in fairfs; Rust printed
 * the panic on stderr). Only this read failed; the pool goes on.
 */
function internalError(path) {
  const where = path === undefined ? '' : ` '${path}'`
  return withCode(new Error(`fairfs: a pool thread panicked while reading${where}; only this read failed (a bug in fairfs, see stderr)`), 'ERR_FAIRFS_INTERNAL')
}

/**
 * node:fs/promises' handleErrorFromBinding: the error's stack is taken where the
 * promise settles, inside the awaiting call, so that it shows the caller as
 * node:fs's does.
 */
function withCallerStack(error) {
  Error.captureStackTrace(error, withCallerStack)
  throw error
}

module.exports = { withCode, withCallerStack, internalError, methodNotImplemented, invalidArgType, invalidArgValue, outOfRange, uvError, fileTooLarge, AbortError }
