// The second half of `npm run test:js`: tests that need the machine to themselves
// (__test__/alone), run after the unit suite, one file at a time.
export default {
  files: ['__test__/alone/**/*.alone.mjs'],
  concurrency: 1,
  timeout: '2m',
  workerThreads: false,
  nodeArguments: ['--expose-gc'],
}
