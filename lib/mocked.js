'use strict'
// Whether node:fs must serve a fairfs call because node:fs's own binding has been
// mocked, as mock-fs mocks it for tests (5.x, and the 4.x releases that set the same
// `_mockedBinding` marker).
//
// mock-fs works below node:fs: at load it wraps each function of process.binding('fs')
// (the object node:fs's functions call) in one that calls a mock file system while
// `binding._mockedBinding` is set, that is between mock(config) and mock.restore()
// (mock.bypass(fn) unsets it while fn runs). fairfs reads on its own threads, past that
// binding, so while a mock is on its files are not there for fairfs (ENOENT), the real
// disk is, and an fd the mock gave out means nothing (or another file) to fairfs. So
// while a mock is on, every fairfs call goes to node:fs's own functions (the node
// backend's, lib/fallback.js), with the mock's files, results and errors, and one
// process warning (FAIRFS_FS_MOCKED) says so. fairfs serves again after mock.restore().
//
// mock-fs also, while it loads, swaps binding.open for a function that watches one
// fs.readFile reach it, to learn node's ReadFileContext from the open request. A
// readFile that fairfs serves never reaches binding.open, so mock-fs loaded after
// fairfs/register threw (patchReadFileContext of undefined). So a call made while
// binding.open is not the function fairfs last saw there goes to node:fs as well, for
// the rest of that tick; on the next, fairfs takes what is there then (mock-fs's
// pass-through wrapper) as the usual function.
//
// The check costs one property load per call where nothing has touched the binding, two
// where mock-fs has loaded (a few nanoseconds each: the binding is a dictionary-mode
// object, so each is a hash lookup).
//
// Reaching the binding is the delicate part: process.binding() is deprecated (DEP0111).
// Node's own function warns of nothing, but --pending-deprecation (or
// NODE_PENDING_DEPRECATION=1) wraps it in one that warns, and with --throw-deprecation
// throws that warning from a later tick, where nothing can catch it; the permission
// model makes it throw ERR_ACCESS_DENIED. So fairfs takes the binding once, when it
// loads, and only from Node's own, unwrapped process.binding; otherwise it does not
// look, and a mock goes unnoticed (mock-fs itself cannot load under the permission
// model).

/** Set on `process` once the warning is out, shared by every copy of fairfs loaded. */
const kWarned = Symbol.for('fairfs.fsMockedWarning')

/** node:fs's binding, the object mock-fs patches; undefined where fairfs does not look. */
const binding = reach()

/**
 * binding.open when fairfs loaded, if it was node:fs's own (a native function named
 * open): while it is still there, no mock-fs has loaded, and one property load answers.
 */
const pristineOpen = binding !== undefined && /^function open\(\) \{ \[native code\] \}$/.test(Function.prototype.toString.call(binding.open)) ? binding.open : null
/** binding.open as fairfs last saw it between ticks. */
let usualOpen = binding?.open
/** A look at binding.open is queued for the next tick. */
let rebasing = false

function reach() {
  // Node's own process.binding is `function binding(module)`; under
  // --pending-deprecation it is util.deprecate's wrapper (`deprecated`).
  if (typeof process.binding !== 'function' || process.binding.name !== 'binding') return undefined
  try {
    const fsBinding = process.binding('fs')
    return fsBinding !== null && typeof fsBinding === 'object' && typeof fsBinding.open === 'function' ? fsBinding : undefined
  } catch {
    // The permission model (ERR_ACCESS_DENIED), or a Node without it.
    return undefined
  }
}

function rebase() {
  rebasing = false
  usualOpen = binding.open
}

/**
 * Whether node:fs must serve the call being made: its binding is mocked now (with the
 * warning, once), or binding.open was replaced in this tick. Nearly free otherwise.
 */
function nodeServes() {
  if (binding === undefined) return false
  const open = binding.open
  if (open === pristineOpen) return false
  const replaced = open !== usualOpen
  if (replaced && !rebasing) {
    rebasing = true
    process.nextTick(rebase)
  }
  if (binding._mockedBinding != null) {
    if (!process[kWarned]) warn()
    return true
  }
  return replaced
}

function warn() {
  Object.defineProperty(process, kWarned, { value: true })
  process.emitWarning(
    "fairfs: node:fs's file system binding is mocked (mock-fs); node:fs serves every fairfs call while it is, " +
      "with the mock's files and node:fs's results, errors and speed.",
    {
      code: 'FAIRFS_FS_MOCKED',
      detail:
        'fairfs serves again once the mock is restored (mock.restore()). ' +
        'node --disable-warning=FAIRFS_FS_MOCKED silences this.',
    },
  )
}

module.exports = { nodeServes }
