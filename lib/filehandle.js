'use strict'
// Holding a FileHandle open while fairfs reads its fd on the pool. node:fs/promises
// wraps each operation on a handle in the handle's own reference count (the
// `kRef`/`kUnref` methods), so that close() waits for them; a fairfs read through
// `handle.fd` must do the same, or a close() mid-read frees the fd number for the
// next open(2) and the read goes on in another file.

/** The handle's `kRef`/`kUnref` methods, found by name (they are not exported); null if a Node line renames them. */
let refs

function findRefs(handle) {
  if (refs !== undefined) return refs
  const proto = Object.getPrototypeOf(handle)
  const symbol = (name) => Object.getOwnPropertySymbols(proto).find((s) => s.description === name && typeof proto[s] === 'function')
  const [ref, unref] = [symbol('kRef'), symbol('kUnref')]
  refs = ref && unref ? { ref, unref } : null
  return refs
}

/** Handles whose close() was wrapped (no kRef on this Node) -> the reads in flight on them. */
const readsInFlight = new WeakMap()

/**
 * Keeps `handle`'s fd open until `done` is called: close() waits until then, as it waits
 * for node's own operations. Returns `done`, to be called once.
 */
function hold(handle) {
  const found = findRefs(handle)
  if (found) {
    handle[found.ref]()
    let released = false
    return () => {
      if (released) return
      released = true
      handle[found.unref]()
    }
  }
  // close is an own property of each handle (a class field), not on the prototype.
  let reads = readsInFlight.get(handle)
  if (!reads) {
    readsInFlight.set(handle, (reads = new Set()))
    const close = handle.close
    handle.close = () => Promise.allSettled([...reads].map((r) => r.settled)).then(() => close.call(handle))
  }
  let release
  const read = { settled: new Promise((resolve) => (release = resolve)) }
  reads.add(read)
  return () => {
    reads.delete(read)
    release()
  }
}

module.exports = { hold }
