// The fd calls of writing (lib/fd-writes.js) against node:fs, and node:fs's own
// WriteStream through them under install(): the cases are in
// fixtures/fd-writes-cases.mjs, loaded here except on Windows, where fairfs's writes
// are node:fs's own and the cases' POSIX setup does not load.
import test from 'ava'
import { windows } from './helpers.mjs'

if (windows) {
  test.skip("fd-writes [not on Windows: fairfs's writes are node:fs's there, and these cases use POSIX fds and tools]", () => {})
} else {
  await import('./fixtures/fd-writes-cases.mjs')
}
