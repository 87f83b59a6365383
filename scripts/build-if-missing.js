// `npm install` hook: make sure a native binary for this platform is present.
// A prebuilt binary (the platform package, or a fresh local build) is used as is;
// otherwise the addon is compiled from source with cargo.
'use strict'
const { execFileSync } = require('node:child_process')
const path = require('node:path')

const root = path.join(__dirname, '..')

function loads() {
  try {
    require(path.join(root, 'binding.js'))
    return true
  } catch {
    return false
  }
}

if (process.env.FAIRFS_SKIP_BUILD || loads()) process.exit(0)

if (!require('node:fs').existsSync(path.join(root, 'Cargo.toml'))) {
  // An installed package: the binary comes from the fairfs-<platform> package.
  console.error(`fairfs: no prebuilt binary for ${process.platform}-${process.arch}; build from a clone of the repository`)
  process.exit(1)
}
console.log('fairfs: no prebuilt binary for this platform, compiling from source (needs cargo)')
const cli = (() => {
  try {
    return require.resolve('@napi-rs/cli/package.json', { paths: [root] })
  } catch {
    return null
  }
})()
if (cli) {
  execFileSync(process.execPath, [path.join(path.dirname(cli), 'dist', 'cli.js'), 'build', '--platform', '--release',
    '--features', 'node', '--js', 'binding.js', '--dts', 'binding.d.ts'], { cwd: root, stdio: 'inherit' })
} else {
  // Installed as a dependency without the CLI: build the library and copy it to
  // the name the committed loader looks for first.
  execFileSync('cargo', ['build', '--release', '--features', 'node'], { cwd: root, stdio: 'inherit' })
  const { platform, arch } = process
  const abi = platform === 'linux' ? (process.report.getReport().header.glibcVersionRuntime ? '-gnu' : '-musl') : ''
  const ext = platform === 'darwin' ? 'dylib' : platform === 'win32' ? 'dll' : 'so'
  const lib = platform === 'win32' ? 'fairfs.dll' : `libfairfs.${ext}`
  require('node:fs').copyFileSync(path.join(root, 'target', 'release', lib), path.join(root, `fairfs.${platform}-${arch}${abi}.node`))
}
if (!loads()) {
  console.error('fairfs: the native addon was built but does not load')
  process.exit(1)
}
