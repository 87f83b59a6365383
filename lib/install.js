'use strict'
// install() / uninstall(): route existing node:fs callers through fairfs.
//
// Patched: fs.readFile, fs.promises.readFile (the same object as
// require('node:fs/promises')), and fs.createReadStream / fs.ReadStream users.
// Not patched: the sync APIs (readFileSync and friends), which must block the
// caller by definition and gain nothing from a pool, and the fs.read*/open
// primitives, whose callers manage fds and buffers themselves.

const fs = require('node:fs')

let originals = null

/** Patches node:fs. Calling it again changes nothing. */
function install(api) {
  if (originals) return
  originals = { readFile: fs.readFile, promisesReadFile: fs.promises.readFile, createReadStream: fs.createReadStream }
  fs.readFile = api.readFileCallback
  fs.promises.readFile = api.promises.readFile
  fs.createReadStream = api.createReadStream
}

/** Restores exactly the functions install() replaced. Calling it again changes nothing. */
function uninstall() {
  if (!originals) return
  fs.readFile = originals.readFile
  fs.promises.readFile = originals.promisesReadFile
  fs.createReadStream = originals.createReadStream
  originals = null
}

function isInstalled() {
  return originals !== null
}

module.exports = { install, uninstall, isInstalled }
