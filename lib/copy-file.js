'use strict'
// copyFile on fairfs's pool (src/jobs/copy_file.rs), callback and promise forms: a chunk
// per step, where node:fs copies a file of any size in one trip through libuv's pool.
// Results and errors are node:fs's (`copyfile`, with `path` and `dest`; a failed copy
// leaves no destination). A call fairfs does not take as it is (paths or a mode node:fs
// would refuse or read its own way) goes to node:fs's own function.

const nodeFs = require('node:fs')
const { binding, trackWrite: track, nativeError } = require('./native')
const { acceptedPath } = require('./args')
const { withCallerStack } = require('./errors')

const node = { copyFile: nodeFs.copyFile, promises: { copyFile: nodeFs.promises.copyFile } }

/** Whether the addon copies (every unix; not Windows yet). */
const supported = typeof binding.copyFile === 'function'

/** A mode fairfs takes as it is: none, or an integer of COPYFILE_* bits; else null. */
function acceptedMode(mode) {
  if (mode == null) return 0
  return Number.isInteger(mode) && mode >= 0 && mode <= 7 ? mode : null
}

function submit(from, to, mode, done) {
  const id = binding.copyFile(from.native, to.native, mode)
  track(id, (result) => done(result === undefined ? null : nativeError(result, from.display, to.display)))
}

/** `fs.copyFile(src, dest[, mode], callback)`. */
function copyFile(src, dest, mode, callback) {
  if (typeof mode === 'function' && callback === undefined) {
    callback = mode
    mode = 0
  }
  const [from, to, bits] = [acceptedPath(src), acceptedPath(dest), acceptedMode(mode)]
  if (!from || !to || bits === null || typeof callback !== 'function') {
    return Reflect.apply(node.copyFile, this, arguments)
  }
  submit(from, to, bits, (err) => callback(err))
}

/** `fs.promises.copyFile(src, dest[, mode])`. */
function copyFilePromise(src, dest, mode) {
  const [from, to, bits] = [acceptedPath(src), acceptedPath(dest), acceptedMode(mode)]
  if (!from || !to || bits === null) return node.promises.copyFile(src, dest, mode)
  return new Promise((resolve, reject) => submit(from, to, bits, (err) => (err ? reject(err) : resolve()))).then(undefined, withCallerStack)
}

module.exports = supported ? { supported, copyFile, promises: { copyFile: copyFilePromise } } : { supported, ...node }
