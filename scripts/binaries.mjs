// Readers of built binaries that the check scripts share (llvm's, from Debian; see
// scripts/cross-tools.sh).
import { execFileSync } from 'node:child_process'

/** llvm-nm's output lines for `args` (with -j: one symbol name each). */
export function nm(args) {
  return execFileSync('llvm-nm', args, { encoding: 'utf8', maxBuffer: 64 << 20 }).split('\n').filter(Boolean)
}

/** The libraries an ELF file needs (DT_NEEDED), given as a path or as its bytes. */
export function needed(file) {
  const [arg, input] = typeof file === 'string' ? [file, undefined] : ['-', file]
  const text = execFileSync('llvm-readelf', ['-d', arg], { input, encoding: 'utf8' })
  return [...text.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1])
}
