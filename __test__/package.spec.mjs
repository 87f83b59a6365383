// The published shape works: the packed package, installed from its tarball with
// the linux-x64-gnu platform package into an empty project, loads from CommonJS,
// ESM and TypeScript.
import test from 'ava'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const binary = path.join(root, 'fairfs.linux-x64-gnu.node')
const npm = (args, cwd) => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })

test('npm pack installs into an empty project and works from CJS, ESM and TypeScript', async (t) => {
  if (process.platform !== 'linux' || process.arch !== 'x64' || !fs.existsSync(binary)) {
    t.fail('this check needs the linux-x64-gnu build (npm run build)')
    return
  }
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'fairfs-pack-'))
  t.teardown(() => fs.rmSync(work, { recursive: true, force: true }))
  const packed = JSON.parse(npm(['pack', '--json', '--pack-destination', work], root))[0]
  t.true(packed.files.every((f) => !/^(target|benches|__test__|src)\//.test(f.path)), 'lean: no target/, benches or tests')
  t.true(packed.size < 100_000, `package is ${packed.size} bytes`)
  // The platform package as `napi artifacts` would fill it.
  const platform = path.join(work, 'platform')
  fs.mkdirSync(platform)
  fs.copyFileSync(path.join(root, 'npm/linux-x64-gnu/package.json'), path.join(platform, 'package.json'))
  fs.copyFileSync(binary, path.join(platform, 'fairfs.linux-x64-gnu.node'))
  const platformTgz = JSON.parse(npm(['pack', '--json', '--pack-destination', work], platform))[0].filename
  const app = path.join(work, 'app')
  fs.mkdirSync(app)
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }))
  npm(['install', '--no-audit', '--no-fund', path.join(work, platformTgz), path.join(work, packed.filename)], app)

  fs.writeFileSync(path.join(app, 'data.txt'), 'hello from fairfs')
  fs.writeFileSync(
    path.join(app, 'cjs.cjs'),
    `const { readFile, install } = require('fairfs'); require('fairfs/register'); const fs = require('node:fs');
     readFile(__dirname + '/data.txt', 'utf8').then((s) => fs.readFile(__dirname + '/data.txt', 'utf8', (e, t) => console.log(s, require('fairfs').isInstalled(), t === s)))`,
  )
  fs.writeFileSync(
    path.join(app, 'esm.mjs'),
    `import fairfs, { readFiles } from 'fairfs'; import 'fairfs/register';
     const [b] = await readFiles([new URL('./data.txt', import.meta.url)]); console.log(b.toString(), fairfs.isInstalled())`,
  )
  const node = process.execPath
  t.is(execFileSync(node, ['cjs.cjs'], { cwd: app, encoding: 'utf8' }), 'hello from fairfs true true\n')
  t.is(execFileSync(node, ['esm.mjs'], { cwd: app, encoding: 'utf8' }), 'hello from fairfs true\n')

  fs.writeFileSync(
    path.join(app, 'main.ts'),
    `import { readFile } from 'fairfs'\nconst s: Promise<string> = readFile('data.txt', 'utf8')\nconst b: Promise<Buffer> = readFile('data.txt')\nvoid [s, b]\n`,
  )
  const tsc = path.join(root, 'node_modules/typescript/bin/tsc')
  const types = path.join(root, 'node_modules/@types')
  execFileSync(node, [tsc, '--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--typeRoots', types, '--types', 'node', 'main.ts'], { cwd: app })
  t.pass()
})
