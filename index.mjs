// ESM entry: the same module as the CommonJS one, with named exports.
import fairfs from './index.js'

export const {
  backend,
  nativeError,
  readFile,
  readFiles,
  writeFile,
  appendFile,
  unlink,
  rename,
  mkdir,
  copyFile,
  stat,
  lstat,
  access,
  readdir,
  promises,
  createReadStream,
  ReadStream,
  configure,
  stats,
  install,
  uninstall,
  isInstalled,
} = fairfs
export default fairfs
