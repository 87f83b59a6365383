// Packs fairfs from a clone as it is published: the main package, and the platform
// package that holds this platform's binary (the main package holds none; npm installs
// the platform package as an optional dependency where it fits).
//
//   npm run pack:local                   (node scripts/pack.mjs)
//   npm install <clone>/target/pack/fairfs-0.1.0.tgz <clone>/target/pack/fairfs-linux-x64-gnu-0.1.0.tgz
//
//   --out <dir>   where the tarballs go (default target/pack)
//   --all         every platform package whose binary is built (a release:
//                 scripts/build-platforms.sh builds the others), not only this platform's
//   --no-build    pack the binary there is; do not build a missing one
//   --json        print [{ name, file }] for each tarball, nothing else
//   --refuse      the `prepack` and `prepublishOnly` hooks: fail with the advice below
//
// The main package's package.json is packed without `scripts`: the clone's `prepare`
// hook (scripts/build-if-missing.js, so that `npm install` in a clone builds the addon)
// must not reach users, for whom it is an install script npm warns about and runs for
// git and folder installs, and whose scripts/ is not in the package anyway. So `npm
// pack` and `npm publish` in the clone itself refuse (`--refuse`), and a release
// publishes the tarballs this script makes.
import { execFileSync } from 'node:child_process'
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { platforms } from './platforms.mjs'

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const args = process.argv.slice(2)

if (args.includes('--refuse')) {
  // npm pack --dry-run only lists: let it.
  if (process.env.npm_config_dry_run === 'true') process.exit(0)
  console.error(
    'fairfs: a package packed from the clone itself would carry its `prepare` hook and no binary.\n' +
      'Run `npm run pack:local` instead: it packs fairfs without lifecycle scripts, and the platform package\n' +
      "with this platform's binary (`-- --all` for every built one); install or publish those tarballs.",
  )
  process.exit(1)
}

const json = args.includes('--json')
const outAt = args.indexOf('--out')
const out = path.resolve(outAt >= 0 ? args[outAt + 1] : path.join(root, 'target', 'pack'))
const log = json ? () => {} : (line) => console.log(line)
const windows = process.platform === 'win32'

/** `npm <args>` in `cwd`, no lifecycle scripts; its stdout. */
function npm(npmArgs, cwd) {
  const all = [...npmArgs, '--ignore-scripts']
  return windows
    ? execFileSync('npm.cmd', all.map((a) => `"${a}"`), { cwd, encoding: 'utf8', shell: true })
    : execFileSync('npm', all, { cwd, encoding: 'utf8' })
}

/** Packs the directory `dir` into `out`; the tarball's file name. */
function pack(dir) {
  return JSON.parse(npm(['pack', '--json', '--pack-destination', out], dir))[0].filename
}

/** This machine's entry in scripts/platforms.mjs, if fairfs ships a binary for it. */
function hostPlatform() {
  const glibc = process.platform === 'linux' && process.report.getReport().header.glibcVersionRuntime !== undefined
  const libc = process.platform !== 'linux' ? undefined : glibc ? 'glibc' : 'musl'
  return Object.values(platforms).find((p) => p.os === process.platform && p.cpu === process.arch && p.libc === libc)
}

/** Where the binary of `platform` is built, if it is: npm/<name>/ or the root. */
function builtBinary(platform) {
  const file = `fairfs.${platform.name}.node`
  return [path.join(root, 'npm', platform.name, file), path.join(root, file)].find(existsSync)
}

mkdirSync(out, { recursive: true })
const stage = mkdtempSync(path.join(os.tmpdir(), 'fairfs-pack-'))
const packed = []
try {
  // The main package: the files `npm pack` takes from the clone, with package.json
  // rewritten without `scripts`.
  const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))
  const { files } = JSON.parse(npm(['pack', '--dry-run', '--json'], root))[0]
  const main = path.join(stage, 'fairfs')
  for (const { path: file } of files) {
    mkdirSync(path.dirname(path.join(main, file)), { recursive: true })
    copyFileSync(path.join(root, file), path.join(main, file))
  }
  delete manifest.scripts
  writeFileSync(path.join(main, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`)
  packed.push({ name: manifest.name, file: path.join(out, pack(main)) })

  // The platform packages.
  const host = hostPlatform()
  const wanted = args.includes('--all') ? Object.values(platforms) : host ? [host] : []
  if (!host) log(`fairfs ships no binary for ${process.platform}-${process.arch}: installed here, it runs on node:fs`)
  for (const platform of wanted) {
    let binary = builtBinary(platform)
    if (binary === undefined && platform === host && !args.includes('--no-build')) {
      log(`no ${platform.name} binary built yet: building it (npm run build, needs cargo)`)
      execFileSync(process.execPath, [path.join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: ['ignore', json ? 'ignore' : 'inherit', 'inherit'] })
      binary = builtBinary(platform)
    }
    if (binary === undefined) {
      // A release (--all) needs every one: say so, and fail once the rest are packed.
      console.error(`${platform.name}: no binary built, not packed`)
      if (args.includes('--all')) process.exitCode = 1
      continue
    }
    const dir = path.join(stage, platform.name)
    cpSync(path.join(root, 'npm', platform.name), dir, { recursive: true })
    copyFileSync(binary, path.join(dir, path.basename(binary)))
    const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'))
    if (pkg.version !== manifest.version) throw new Error(`${pkg.name} is ${pkg.version}, fairfs is ${manifest.version}`)
    packed.push({ name: pkg.name, file: path.join(out, pack(dir)), binary: path.relative(root, binary) })
  }
} finally {
  rmSync(stage, { recursive: true, force: true })
}

if (json) {
  console.log(JSON.stringify(packed.map(({ name, file }) => ({ name, file }))))
} else {
  for (const { file, binary } of packed) log(`${path.relative(process.cwd(), file) || file}${binary ? ` (${binary})` : ''}`)
  log(`\nTo install them in a project:\n  npm install ${packed.map(({ file }) => file).join(' ')}`)
}
