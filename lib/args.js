'use strict'
// node:fs's argument handling (readFile's and createReadStream's), in the same
// order and with the same errors.

const { Buffer } = require('node:buffer')
const { fileURLToPath } = require('node:url')
const { toNamespacedPath } = require('node:path')
const { constants: { O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND, O_EXCL, O_SYNC } } = require('node:fs')
const { invalidArgType, invalidArgValue, outOfRange } = require('./errors')

const kDefaults = Object.freeze({ flag: 'r' })

/**
 * node:fs's getOptions: a string is the encoding (over `defaults`); an object is
 * checked, never mutated.
 */
function getOptions(options, defaults = kDefaults) {
  if (options == null || typeof options === 'function') return defaults
  if (typeof options === 'string') options = { ...defaults, encoding: options }
  else if (typeof options !== 'object') throw invalidArgType('options', 'one of type string or object', options)
  if (options.encoding !== 'buffer' && options.encoding && !Buffer.isEncoding(options.encoding)) {
    throw invalidArgValue('encoding', options.encoding, 'is invalid encoding')
  }
  if (options.signal !== undefined) validateAbortSignal(options.signal)
  return options
}

function validateAbortSignal(signal) {
  if (signal !== undefined && (signal === null || typeof signal !== 'object' || !('aborted' in signal))) {
    throw invalidArgType('options.signal', 'an instance of AbortSignal', signal)
  }
}

const kFlags = {
  r: O_RDONLY,
  rs: O_RDONLY | O_SYNC,
  sr: O_RDONLY | O_SYNC,
  'r+': O_RDWR,
  'rs+': O_RDWR | O_SYNC,
  'sr+': O_RDWR | O_SYNC,
  w: O_TRUNC | O_CREAT | O_WRONLY,
  wx: O_TRUNC | O_CREAT | O_WRONLY | O_EXCL,
  xw: O_TRUNC | O_CREAT | O_WRONLY | O_EXCL,
  'w+': O_TRUNC | O_CREAT | O_RDWR,
  'wx+': O_TRUNC | O_CREAT | O_RDWR | O_EXCL,
  'xw+': O_TRUNC | O_CREAT | O_RDWR | O_EXCL,
  a: O_APPEND | O_CREAT | O_WRONLY,
  ax: O_APPEND | O_CREAT | O_WRONLY | O_EXCL,
  xa: O_APPEND | O_CREAT | O_WRONLY | O_EXCL,
  as: O_APPEND | O_CREAT | O_WRONLY | O_SYNC,
  sa: O_APPEND | O_CREAT | O_WRONLY | O_SYNC,
  'a+': O_APPEND | O_CREAT | O_RDWR,
  'ax+': O_APPEND | O_CREAT | O_RDWR | O_EXCL,
  'xa+': O_APPEND | O_CREAT | O_RDWR | O_EXCL,
  'as+': O_APPEND | O_CREAT | O_RDWR | O_SYNC,
  'sa+': O_APPEND | O_CREAT | O_RDWR | O_SYNC,
}

/** node:fs's stringToFlags: a number passes through, a known string maps to O_* bits. */
function stringToFlags(flags, name = 'flags') {
  if (typeof flags === 'number') {
    validateInteger(flags, name, -(2 ** 31), 2 ** 31 - 1)
    return flags
  }
  if (flags == null) return O_RDONLY
  if (typeof flags === 'string' && Object.hasOwn(kFlags, flags)) return kFlags[flags]
  throw invalidArgValue('flags', flags) // named so whatever the caller's name
}

const kWindows = process.platform === 'win32'

/**
 * node:fs's getValidatedPath. Returns `{ path, native, display }`: the path as node:fs
 * validates it (a string or bytes), what to hand to the addon, and the string node:fs
 * puts in `err.path`.
 *
 * On Windows node:fs opens a string path as `path.toNamespacedPath` makes it (resolved
 * against the working directory, `/` turned into `\`, `\\?\` in front), and its errors
 * show that path without the `\\?\` (or `\\?\UNC\`) prefix: readFile('a/b') fails with
 * err.path `C:\cwd\a\b`, and file://host/x with `\\host\x\`. fairfs does the same.
 * Bytes go as they are, as in node:fs; elsewhere a string does too.
 */
function validatePath(path) {
  if (path instanceof URL) {
    path = fileURLToPath(path)
  } else if (typeof path !== 'string' && !(path instanceof Uint8Array)) {
    throw invalidArgType('path', 'of type string or an instance of Buffer or URL', path)
  }
  if (path.includes(typeof path === 'string' ? '\u0000' : 0)) {
    throw invalidArgValue('path', path, 'must be a string, Uint8Array, or URL without null bytes')
  }
  if (typeof path === 'string') {
    if (!kWindows) return { path, native: path, display: path }
    const native = toNamespacedPath(path)
    return { path, native, display: withoutNamespace(native) }
  }
  return { path, native: path, display: Buffer.from(path.buffer, path.byteOffset, path.byteLength).toString() }
}

/** How Node's C++ shows a namespaced path in an error (StringFromPath, src/api/exceptions.cc). */
function withoutNamespace(path) {
  if (path.startsWith('\\\\?\\UNC\\')) return `\\\\${path.slice(8)}`
  if (path.startsWith('\\\\?\\')) return path.slice(4)
  return path
}

const isInt32 = (value) => typeof value === 'number' && value === (value | 0)

/** A node:fs/promises FileHandle (its class is not exported, so it is recognised by shape). */
function isFileHandle(value) {
  return value !== null && typeof value === 'object' && value.constructor?.name === 'FileHandle' && typeof value.fd === 'number'
}

/** node:fs's copyObject: own and inherited enumerable options. */
function copyOptions(source) {
  const copy = {}
  for (const key in source) copy[key] = source[key]
  return copy
}

/** node:fs's parseFileMode: a 32-bit unsigned integer or an octal string; `def` if nullish. */
function parseFileMode(value, name, def) {
  value ??= def
  if (typeof value === 'string') {
    if (!/^[0-7]+$/.test(value)) throw invalidArgValue(name, value, 'must be a 32-bit unsigned integer or an octal string')
    value = Number.parseInt(value, 8)
  }
  validateInteger(value, name, 0, 2 ** 32 - 1)
  return value
}

/** node:fs's validateBoolean. */
function validateBoolean(value, name) {
  if (typeof value !== 'boolean') throw invalidArgType(name, 'of type boolean', value)
}

/** node:fs's validateInteger. */
function validateInteger(value, name, min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER) {
  if (typeof value !== 'number') throw invalidArgType(name, 'of type number', value)
  if (!Number.isInteger(value)) throw outOfRange(name, 'an integer', value)
  if (value < min || value > max) throw outOfRange(name, `>= ${min} && <= ${max}`, value)
}

/** node:fs's getValidatedFd for the `fd` option: a number (FileHandles are handled apart). */
function validateFd(fd) {
  if (typeof fd !== 'number') throw invalidArgType('options.fd', 'of type number or an instance of FileHandle', fd)
  validateInteger(fd, 'fd', 0, 2 ** 31 - 1)
}

/** lib/mocked.js, loaded on first use (a require per call cost a cached stat 0.3 µs). */
let mocked = null

/**
 * `{ native, display }` of a path fairfs takes as it is (validatePath's, without its
 * throw); null where node:fs must judge it (a path it would refuse, with its own error),
 * or serve it: while node:fs's binding is mocked (lib/mocked.js), every call.
 */
function acceptedPath(path) {
  if (typeof path !== 'string' && !(path instanceof Uint8Array) && !(path instanceof URL)) return null
  if ((mocked ??= require('./mocked')).nodeServes()) return null
  try {
    return validatePath(path)
  } catch {
    return null
  }
}

module.exports = { getOptions, copyOptions, stringToFlags, validatePath, acceptedPath, validateInteger, validateFd, parseFileMode, validateBoolean, isInt32, isFileHandle }
