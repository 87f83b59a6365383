'use strict'
// fairfs's API, named once. index.js exports these from the backend it chose (with
// `backend` and `nativeError`), and each backend provides exactly these. ESM needs
// its names written out, so index.mjs lists them again; __test__/exports.spec.mjs
// checks that every entry point and both backends match this list.

module.exports = Object.freeze([
  'readFile',
  'readFiles',
  'writeFile',
  'appendFile',
  'unlink',
  'rename',
  'mkdir',
  'copyFile',
  'stat',
  'lstat',
  'access',
  'readdir',
  'promises',
  'createReadStream',
  'ReadStream',
  'configure',
  'stats',
  'install',
  'uninstall',
  'isInstalled',
])
