// Fetches Bun and Deno for `npm run bench -- --peers`, from the npm registry, once,
// into node_modules/.cache/fairfs-peers (never during npm install). `npm pack` and tar,
// because an `npm install` of @oven/bun-linux-x64 left its bin/ empty here.
import fs from 'node:fs'
import path from 'node:path'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const repo = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
export const cacheDir = path.join(repo, 'node_modules', '.cache', 'fairfs-peers')

const PEERS = {
  bun: { pkg: '@oven/bun-linux-x64@1.4.5', file: 'package/bin/bun' },
  deno: { pkg: '@deno/linux-x64-glibc@2.9.6', file: 'package/deno' },
}

/** The path of runtime `name`'s binary, fetched if missing; throws where it cannot run here. */
export function peerBinary(name) {
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error(`--peers fetches linux-x64 builds only (this is ${process.platform}-${process.arch})`)
  const { pkg, file } = PEERS[name]
  const dir = path.join(cacheDir, pkg.replace(/[@/]/g, '_'))
  const bin = path.join(dir, file)
  if (!fs.existsSync(bin)) {
    fs.mkdirSync(dir, { recursive: true })
    const tgz = execFileSync('npm', ['pack', pkg, '--silent', '--pack-destination', dir], { encoding: 'utf8' }).trim().split('\n').pop()
    execFileSync('tar', ['xzf', path.join(dir, tgz), '-C', dir, file])
    fs.rmSync(path.join(dir, tgz))
    fs.chmodSync(bin, 0o755)
  }
  return bin
}
