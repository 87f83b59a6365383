// `npm run test:soak`: the soak tests (__test__/soak), kept out of `npm test` because
// they take minutes. The other settings are the unit suite's (package.json "ava").
export default {
  files: ['__test__/soak/**/*.soak.mjs'],
  timeout: '10m',
  workerThreads: false,
  nodeArguments: ['--expose-gc'],
}
