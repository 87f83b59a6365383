// Packs every platform package (npm/<platform>) with its binary, as a release would,
// and checks what the tarball holds: exactly package.json, README.md and one binary,
// of the format its platform loads (ELF for the CPU and C library, Mach-O for the CPU,
// a PE DLL for x64).
//
//   node scripts/check-packages.mjs     (after the binaries are built)
//
// A binary is taken from npm/<platform>/ (where scripts/build.mjs puts the foreign
// ones) or else from the repository root (where the linux gnu builds land).
import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { needed } from './binaries.mjs'
import { platforms } from './platforms.mjs'

const ELF_MACHINE = { x64: 62, arm64: 183 }
const MACHO_CPU = { x64: 0x01000007, arm64: 0x0100000c }

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const work = mkdtempSync(path.join(os.tmpdir(), 'fairfs-packages-'))
let failures = 0
try {
  for (const [triple, platform] of Object.entries(platforms)) {
    const file = `fairfs.${platform.name}.node`
    const dir = path.join(work, platform.name)
    execFileSync('cp', ['-r', path.join(root, 'npm', platform.name), dir])
    const binary = [path.join(root, 'npm', platform.name, file), path.join(root, file)].find(existsSync)
    if (binary === undefined) {
      console.error(`${platform.name}: no ${file} built`)
      failures++
      continue
    }
    copyFileSync(binary, path.join(dir, file))
    const tgz = execFileSync('npm', ['pack', '--silent', '--pack-destination', work], { cwd: dir, encoding: 'utf8' }).trim().split('\n').pop()
    const out = path.join(work, `${platform.name}-unpacked`)
    execFileSync('mkdir', ['-p', out])
    execFileSync('tar', ['-xzf', path.join(work, tgz), '-C', out])
    const held = readdirSync(path.join(out, 'package')).sort()
    const problems = []
    if (held.join() !== ['README.md', file, 'package.json'].sort().join()) problems.push(`holds ${held.join(', ')}`)
    const packed = path.join(out, 'package', file)
    if (existsSync(packed)) problems.push(...formatProblems(readFileSync(packed), platform))
    for (const p of problems) console.error(`${tgz}: ${p}`)
    failures += problems.length
    console.log(`${tgz}: ${held.join(', ')}; ${describe(readFileSync(packed))} (${triple})${problems.length ? '' : ': ok'}`)
  }
} finally {
  rmSync(work, { recursive: true, force: true })
}
if (failures > 0) process.exit(1)

function formatProblems(buf, { os: platformOs, cpu, libc }) {
  if (platformOs === 'linux' || platformOs === 'freebsd') {
    if (buf.readUInt32BE(0) !== 0x7f454c46 || buf[4] !== 2) return ['not a 64-bit ELF file']
    if (buf.readUInt16LE(16) !== 3) return ['not an ELF shared object']
    if (buf.readUInt16LE(18) !== ELF_MACHINE[cpu]) return [`ELF machine ${buf.readUInt16LE(18)}, not ${cpu}`]
    // The C library it needs tells glibc, musl and FreeBSD apart.
    const wantLibc = { glibc: 'libc.so.6', musl: 'libc.so' }[libc] ?? 'libc.so.7'
    if (!needed(buf).includes(wantLibc)) return [`needs ${needed(buf).join(' ')}, not ${wantLibc}`]
    return []
  }
  if (platformOs === 'darwin') {
    if (buf.readUInt32LE(0) !== 0xfeedfacf) return ['not a 64-bit Mach-O file']
    if (buf.readUInt32LE(4) !== MACHO_CPU[cpu]) return [`Mach-O CPU ${buf.readUInt32LE(4).toString(16)}, not ${cpu}`]
    if (buf.readUInt32LE(12) !== 6) return ['not a Mach-O dylib']
    return []
  }
  if (platformOs === 'win32') {
    if (buf.toString('latin1', 0, 2) !== 'MZ') return ['not a PE file']
    const pe = buf.readUInt32LE(0x3c)
    if (buf.readUInt32BE(pe) !== 0x50450000) return ['no PE header']
    if (buf.readUInt16LE(pe + 4) !== 0x8664) return [`PE machine ${buf.readUInt16LE(pe + 4).toString(16)}, not x64`]
    if ((buf.readUInt16LE(pe + 22) & 0x2000) === 0) return ['not a DLL']
    return []
  }
  return [`unknown os ${platformOs}`]
}

function describe(buf) {
  if (buf.readUInt32BE(0) === 0x7f454c46) return `ELF ${buf.readUInt16LE(18) === 62 ? 'x86-64' : 'aarch64'} needing ${needed(buf).join(' ')}`
  if (buf.readUInt32LE(0) === 0xfeedfacf) return `Mach-O ${buf.readUInt32LE(4) === MACHO_CPU.arm64 ? 'arm64' : 'x86_64'} dylib`
  if (buf.toString('latin1', 0, 2) === 'MZ') return 'PE32+ x86-64 DLL'
  return 'unknown format'
}
