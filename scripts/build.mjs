// Builds the addon, the way every build of it should be made (tests, bench, release).
//
//   node scripts/build.mjs [--debug] [--test-hooks] [--target <triple>] [--out <dir>]
//
// `--test-hooks` adds the cargo feature of that name (fault hooks for tests; never
// in a release build). `--out` builds a variant (say, with RUSTFLAGS="--cfg fairfs_portable") into <dir>
// with its own cargo target dir, leaving the repository's own build alone; load it
// with NAPI_RS_NATIVE_LIBRARY_PATH=<dir>/fairfs.<platform>.node.
//
// * linux-x64 host, linux gnu target: links with napi-rs's cross toolchain (a glibc
//   2.17 sysroot, see scripts/cross-toolchain.mjs), so the binary we test is the one
//   we ship and loads on any glibc >= 2.17, not only on this machine's glibc.
// * A target whose std rustup does not have here (aarch64-unknown-linux-gnu) is built
//   with Debian's Rust and `-Zbuild-std` (scripts/debian-rust.sh installs it).
// * macOS, FreeBSD, linux musl and Windows (scripts/platforms.mjs): Debian's Rust with
//   `-Zbuild-std`, linked by zig (cargo-zigbuild) or mingw-w64, from
//   scripts/cross-tools.sh; the binary lands in npm/<platform>/.
// * Anywhere else (a clone on macOS, say): a plain `napi build` for the host.
//
// The generated loader and types (binding.js, binding.d.ts) come from host builds
// only; they are the same for every target.
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { platforms } from './platforms.mjs'

/** Debian's Rust (scripts/debian-rust.sh), allowed -Zbuild-std. */
const debianRust = { CARGO: '/usr/bin/cargo', RUSTC: '/usr/bin/rustc', RUSTC_BOOTSTRAP: '1' }

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const args = process.argv.slice(2)
const debug = args.includes('--debug')
const features = args.includes('--test-hooks') ? 'node,test-hooks' : 'node'
const targetAt = args.indexOf('--target')
const target = targetAt >= 0 ? args[targetAt + 1] : undefined
const outAt = args.indexOf('--out')
const out = outAt >= 0 ? args[outAt + 1] : undefined

if (target !== undefined && platforms[target]?.linker !== undefined) {
  buildForeign(target, platforms[target])
  process.exit(0)
}

const hostTriple = { x64: 'x86_64-unknown-linux-gnu', arm64: 'aarch64-unknown-linux-gnu' }[process.arch]
const linuxX64 = process.platform === 'linux' && process.arch === 'x64' && process.report.getReport().header.glibcVersionRuntime !== undefined
const triple = target ?? (linuxX64 ? hostTriple : undefined)
const napiCross = linuxX64 && (triple === 'x86_64-unknown-linux-gnu' || triple === 'aarch64-unknown-linux-gnu')
const foreignStd = triple !== undefined && triple !== hostTriple

const napi = ['node_modules/@napi-rs/cli/dist/cli.js', 'build', '--platform', '--features', features]
if (!debug) napi.push('--release')
if (triple) napi.push('--target', triple)
if (out) napi.push('--output-dir', out, '--no-js', '--dts', 'binding.d.ts', '--target-dir', path.join(out, 'target'))
else if (foreignStd) napi.push('--no-js', '--dts', path.join('target', triple, 'binding.d.ts'))
else napi.push('--js', 'binding.js', '--dts', 'binding.d.ts')

const env = { ...process.env }
if (napiCross) {
  execFileSync(process.execPath, [path.join(root, 'scripts/cross-toolchain.mjs'), triple], { cwd: root, stdio: 'inherit' })
  napi.push('--use-napi-cross')
}
if (foreignStd) {
  execFileSync('bash', [path.join(root, 'scripts/debian-rust.sh')], { cwd: root, stdio: 'inherit' })
  Object.assign(env, debianRust)
  if (!out) napi.push('--target-dir', path.join('target', 'build-std'))
  napi.push('--', '-Zbuild-std=std,panic_abort')
}

execFileSync(process.execPath, napi, { cwd: root, stdio: 'inherit', env })

/**
 * A release build for a platform this machine cannot run: `cargo build` (or `cargo
 * zigbuild`) with Debian's Rust and -Zbuild-std, then the cdylib copied to
 * npm/<platform>/fairfs.<platform>.node, where `npm pack` of that package takes it.
 */
function buildForeign(triple, platform) {
  const bin = execFileSync('bash', [path.join(root, 'scripts/cross-tools.sh')], { cwd: root, encoding: 'utf8' }).trim()
  const targetDir = out ? path.join(out, 'target') : path.join('target', 'platforms')
  const env = {
    ...process.env,
    PATH: `${bin}:${process.env.PATH}`,
    ...debianRust,
    ...platform.env,
  }
  if (platform.linker === 'mingw') env.LIBNODE_PATH = path.join(root, 'target', 'tools', 'libnode')
  const rustflags = [process.env.RUSTFLAGS, ...(platform.rustflags ?? [])].filter(Boolean).join(' ')
  if (rustflags) env.RUSTFLAGS = rustflags
  const cargo = [debianRust.CARGO, platform.linker === 'zig' ? 'zigbuild' : 'build']
  cargo.push('--locked', '--lib', '--features', features, '--target', triple, '--target-dir', targetDir, '-Zbuild-std=std,panic_abort')
  if (!debug) cargo.push('--release')
  execFileSync(cargo[0], cargo.slice(1), { cwd: root, stdio: 'inherit', env })
  const built = path.resolve(root, targetDir, triple, debug ? 'debug' : 'release', platform.artifact)
  const dest = path.resolve(root, out ?? path.join('npm', platform.name), `fairfs.${platform.name}.node`)
  mkdirSync(path.dirname(dest), { recursive: true })
  copyFileSync(built, dest)
  console.log(`${path.relative(root, dest)}: ${triple}`)
}
