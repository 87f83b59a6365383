'use strict'
// An AbortSignal's requests on the pool: one 'abort' listener per signal, and an abort
// cancels all of its requests in one native call.

const { types: { isProxy } } = require('node:util')
const { binding: native } = require('./native')

/**
 * Requests in flight per AbortSignal: one 'abort' listener per signal, however many requests
 * share it (node:fs adds none; one per read made Node warn of a listener leak at 11),
 * removed when its last request settles. An abort cancels all of them in one call.
 */
const signalReads = new WeakMap()

function watchSignal(signal, id) {
  // A Proxy around a signal (Node's own tests wrap options in one to prove nothing is
  // written to them) gets no listener: node:fs adds none either, and looks at
  // `aborted` between chunks; here the delivery looks at it (interpret()). So does an
  // object that only looks like a signal (node:fs takes any with an `aborted` property).
  if (isProxy(signal) || typeof signal.addEventListener !== 'function') return
  let entry = signalReads.get(signal)
  if (entry === undefined) {
    entry = {
      ids: new Set(),
      onAbort() {
        signalReads.delete(signal)
        native.cancelMany([...entry.ids])
      },
    }
    signalReads.set(signal, entry)
    signal.addEventListener('abort', entry.onAbort, { once: true })
  }
  entry.ids.add(id)
}

function unwatchSignal(signal, id) {
  const entry = signalReads.get(signal)
  if (entry === undefined || !entry.ids.delete(id) || entry.ids.size > 0) return
  signalReads.delete(signal)
  signal.removeEventListener('abort', entry.onAbort)
}

module.exports = { watchSignal, unwatchSignal }
