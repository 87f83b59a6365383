// The published shape works, installed from tarballs into empty projects as a user
// installs it. The tarballs are what `npm run pack:local` (scripts/pack.mjs) makes, as a
// release does: the main package, without lifecycle scripts, and the platform package.
// * `npm pack` of the clone itself refuses: it would ship the clone's prepare hook;
// * the main package alone (every platform without a prebuilt binary): the install
//   succeeds without npm's install-script warning, and fairfs runs on its node:fs
//   backend, saying once that the platform package is not installed;
// * the main package with this platform's package: the native backend, from CommonJS,
//   ESM and TypeScript compiled for CommonJS (with and without esModuleInterop),
//   node16 (both module kinds) and bundlers;
// * the binary we ship stays within the glibc floor.
import test from 'ava'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFileSync, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { windows, posixOnly, noGlibc, emulated, portable } from './helpers.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const platform = { 'linux-x64': 'linux-x64-gnu', 'linux-arm64': 'linux-arm64-gnu', 'win32-x64': 'win32-x64-msvc' }[`${process.platform}-${process.arch}`]
const binary = path.join(root, `fairfs.${platform}.node`)
// On Windows npm is npm.cmd, which only a shell runs (the arguments quoted for cmd.exe).
const npm = (args, cwd) =>
  windows
    ? execFileSync('npm.cmd', args.map((a) => `"${a}"`), { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], shell: true })
    : execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
/** scripts/test-windows.sh installs node.exe alone: there these tests have no npm to run. */
const npmMissing = windows && (() => {
  try {
    npm(['--version'], root)
    return false
  } catch {
    return true
  }
})()
const withNpm = npmMissing ? (title, fn) => test.skip(`${title} [needs npm, which this Windows machine lacks]`, fn) : test
// The TypeScript builds check how the package's files fit together, the same in every
// run: CI's runs on the node backend, the portable build and under qemu skip them.
const tsRun = emulated ? 'qemu-user' : portable ? 'portable build' : process.env.FAIRFS_BACKEND === 'node' ? 'node backend run' : null
const withTypeScript = tsRun ? (title, fn) => test.skip(`${title} [checked in the main run, not the ${tsRun}]`, fn) : withNpm
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'fairfs-pack-'))
process.on('exit', () => fs.rmSync(work, { recursive: true, force: true }))

// What a user's process sees: no test-suite switches.
const env = { ...process.env }
delete env.FAIRFS_BACKEND
delete env.NAPI_RS_NATIVE_LIBRARY_PATH

/** The tarballs scripts/pack.mjs made: fairfs's, and this platform's package's if its binary is built. */
let main
let platformTgz
test.before(() => {
  if (npmMissing) return
  const packed = JSON.parse(execFileSync(process.execPath, [path.join(root, 'scripts/pack.mjs'), '--out', work, '--json', '--no-build'], { encoding: 'utf8' }))
  main = packed.find((p) => p.name === 'fairfs').file
  platformTgz = packed.find((p) => p.name === `fairfs-${platform}`)?.file
})

/** npm install's warnings (its stderr), by the project's directory. */
const installLogs = new Map()

/** An empty project with `tarballs` installed; returns its directory. */
function app(name, tarballs) {
  const dir = path.join(work, name)
  fs.mkdirSync(dir)
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name, private: true }))
  try {
    const { stderr } = spawnNpm(['install', '--no-audit', '--no-fund', ...tarballs], dir)
    installLogs.set(dir, stderr)
  } catch (e) {
    throw new Error(`npm install failed: ${e.stderr ?? e.message}`)
  }
  fs.writeFileSync(path.join(dir, 'data.txt'), 'hello from fairfs')
  fs.writeFileSync(
    path.join(dir, 'cjs.cjs'),
    `const fairfs = require('fairfs'); require('fairfs/register'); const fs = require('node:fs')
     fairfs.readFile(__dirname + '/data.txt', 'utf8').then((s) => fs.readFile(__dirname + '/data.txt', 'utf8', (e, t) => {
       const chunks = []
       fairfs.createReadStream(__dirname + '/data.txt').on('data', (c) => chunks.push(c)).on('end', () =>
         console.log(JSON.stringify({ s, same: t === s, stream: Buffer.concat(chunks).toString(), backend: fairfs.stats().backend,
           exported: fairfs.backend, nativeError: fairfs.nativeError === null ? null : String(fairfs.nativeError.message),
           installed: fairfs.isInstalled() })))
     }))`,
  )
  fs.writeFileSync(
    path.join(dir, 'esm.mjs'),
    `import fairfs, { readFiles, promises } from 'fairfs'; import 'fairfs/register'
     const [b] = await readFiles([new URL('./data.txt', import.meta.url)])
     const p = await promises.readFile(new URL('./data.txt', import.meta.url), 'utf8')
     console.log(JSON.stringify({ s: b.toString(), p, backend: fairfs.stats().backend }))`,
  )
  fs.writeFileSync(
    path.join(dir, 'main.ts'),
    `import { readFile, backend, stats } from 'fairfs'\nconst s: Promise<string> = readFile('data.txt', 'utf8')\n` +
      `const b: Promise<Buffer> = readFile('data.txt')\nconst k: 'native' | 'node' = backend\nconst t: 'native' | 'node' = stats().backend\nvoid [s, b, k, t]\n`,
  )
  return dir
}

/** `npm <args>` in `cwd`, with its stderr (npm's warnings); throws on failure. */
function spawnNpm(args, cwd) {
  const r = windows
    ? spawnSync('npm.cmd', args.map((a) => `"${a}"`), { cwd, encoding: 'utf8', shell: true })
    : spawnSync('npm', args, { cwd, encoding: 'utf8' })
  if (r.status !== 0) throw Object.assign(new Error(`npm ${args[0]} exited ${r.status}`), { stderr: r.stderr })
  return r
}

function run(dir, file) {
  const r = spawnSync(process.execPath, [file], { cwd: dir, env, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`${file} exited ${r.status}: ${r.stderr}`)
  return { out: JSON.parse(r.stdout), warnings: r.stderr.match(/FAIRFS_NATIVE_UNAVAILABLE/g)?.length ?? 0, stderr: r.stderr }
}

function typecheck(dir) {
  const tsc = path.join(root, 'node_modules/typescript/bin/tsc')
  const types = path.join(root, 'node_modules/@types')
  execFileSync(process.execPath, [tsc, '--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--typeRoots', types, '--types', 'node', 'main.ts'], { cwd: dir })
}

/** TypeScript as users compile it: tsc's options for each build, and its files. */
const tsBuilds = {
  // CommonJS without esModuleInterop reads `require('fairfs').default` for the default import.
  commonjs: { options: { module: 'commonjs' }, files: ['commonjs.ts'] },
  interop: { options: { module: 'commonjs', esModuleInterop: true }, files: ['commonjs.ts'] },
  // A .ts file of a package without "type" is CommonJS under node16, a .mts one ESM.
  node16: { options: { module: 'node16', moduleResolution: 'node16' }, files: ['node16.ts', 'node16.mts'] },
  bundler: { options: { module: 'esnext', moduleResolution: 'bundler' }, files: ['bundler.mts'] },
}
const tsSource = `import fairfs from 'fairfs'
import { readFile, backend } from 'fairfs'
import * as namespace from 'fairfs'
Promise.all([fairfs.readFile('data.txt', 'utf8'), readFile('data.txt', 'utf8'), namespace.readFile('data.txt', 'utf8')]).then(([viaDefault, named, viaNamespace]) =>
  console.log(JSON.stringify({ viaDefault, named, viaNamespace, backends: [fairfs.backend, backend, namespace.backend] })))
`

/**
 * Compiles tsSource with every tsBuilds setting, each into out/<name>/, and runs what
 * each emitted: `{ 'commonjs/commonjs.js': output, … }`. One process runs the compiler
 * for all four (loading it is most of the cost), without @types/node (parsing it is
 * the rest): index.d.ts itself is checked strictly by typecheck() and npm run test:types.
 */
function compileAndRunTypeScript(t, dir) {
  for (const file of new Set(Object.values(tsBuilds).flatMap((b) => b.files))) fs.writeFileSync(path.join(dir, file), tsSource)
  const compile = `const ts = require(${JSON.stringify(path.join(root, 'node_modules/typescript'))})
    const builds = ${JSON.stringify(tsBuilds)}
    const errors = []
    for (const [name, { options, files }] of Object.entries(builds)) {
      const json = { strict: true, skipLibCheck: true, target: 'es2022', types: [], outDir: 'out/' + name, ...options }
      const program = ts.createProgram(files, ts.convertCompilerOptionsFromJson(json, process.cwd()).options)
      const diagnostics = [...ts.getPreEmitDiagnostics(program), ...program.emit().diagnostics]
      for (const d of diagnostics) errors.push(name + ': ' + ts.flattenDiagnosticMessageText(d.messageText, ' '))
    }
    console.log(JSON.stringify(errors))`
  t.deepEqual(JSON.parse(execFileSync(process.execPath, ['-e', compile], { cwd: dir, encoding: 'utf8' })), [], 'tsc reports no errors')
  const results = {}
  for (const [name, { files }] of Object.entries(tsBuilds)) {
    for (const file of files) {
      const emitted = path.join('out', name, file.replace(/\.ts$/, '.js').replace(/\.mts$/, '.mjs'))
      const r = spawnSync(process.execPath, [emitted], { cwd: dir, env, encoding: 'utf8' })
      results[`${name}/${path.basename(emitted)}`] = r.status === 0 ? JSON.parse(r.stdout) : r.stderr.split('\n').find((l) => /Error/.test(l))
    }
  }
  return results
}

/** The files a tarball holds, without the leading package/. */
const tarFiles = (tgz) => execFileSync('tar', ['-tzf', tgz], { encoding: 'utf8' }).trim().split('\n').map((f) => f.replace(/^package\//, ''))

withNpm('the package is lean and has no lifecycle script; npm pack of the clone refuses', (t) => {
  const files = tarFiles(main)
  t.true(files.every((f) => !/^(target|benches|__test__|src|scripts|npm)\//.test(f)), 'no target/, sources, scripts or tests')
  t.true(files.includes('index.js') && files.includes('README.md') && files.includes('LICENSE'), files.join(', '))
  t.false(files.some((f) => f.endsWith('.node')), 'no binary: it is in the platform package')
  const size = fs.statSync(main).size
  t.true(size < 100_000, `package is ${size} bytes`)
  const packedManifest = JSON.parse(execFileSync('tar', ['-xzOf', main, 'package/package.json'], { encoding: 'utf8' }))
  t.is(packedManifest.scripts, undefined, 'no scripts: the clone\'s prepare hook stays in the clone')
  const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'))
  for (const hook of ['preinstall', 'install', 'postinstall']) t.is(manifest.scripts[hook], undefined, hook)
  t.deepEqual({ ...packedManifest, scripts: manifest.scripts }, manifest, 'the rest of package.json is the clone\'s')
  // `npm pack` of the clone would ship its prepare hook and no binary: it refuses, and says what to run.
  const refused = t.throws(() => spawnNpm(['pack', '--pack-destination', work], root))
  t.regex(refused.stderr, /npm run pack:local/)
  // Every platform package we list is one we build, and the other way round.
  const listed = Object.keys(manifest.optionalDependencies).sort()
  const dirs = fs.readdirSync(path.join(root, 'npm')).map((d) => JSON.parse(fs.readFileSync(path.join(root, 'npm', d, 'package.json'), 'utf8')))
  t.deepEqual(listed, dirs.map((p) => p.name).sort())
  for (const p of dirs) t.is(manifest.optionalDependencies[p.name], manifest.version, `${p.name} is pinned to this version`)
  t.is(manifest.napi.targets.length, dirs.length)
})

withNpm('the main package alone installs cleanly and runs on node:fs, saying so once', (t) => {
  const dir = app('alone', [main])
  t.false(fs.existsSync(path.join(dir, 'node_modules', `fairfs-${platform}`)), 'no platform package was found')
  t.notRegex(installLogs.get(dir), /install.scripts?/i, 'npm finds no install script to warn about')
  const cjs = run(dir, 'cjs.cjs')
  t.like(cjs.out, { s: 'hello from fairfs', same: true, stream: 'hello from fairfs', backend: 'node', exported: 'node', installed: false })
  t.is(typeof cjs.out.nativeError, 'string')
  t.is(cjs.warnings, 1, cjs.stderr)
  t.regex(cjs.stderr, new RegExp(`${process.platform}-${process.arch}`), 'the warning names the platform')
  t.regex(cjs.stderr, new RegExp(`its platform package fairfs-${platform} is not installed`), 'and the real cause')
  t.notRegex(cjs.stderr.split('\n')[0], /npm has a bug/, 'not npm\'s optional-dependency bug')
  const esm = run(dir, 'esm.mjs')
  t.deepEqual(esm.out, { s: 'hello from fairfs', p: 'hello from fairfs', backend: 'node' })
  t.is(esm.warnings, 1, esm.stderr)
  typecheck(dir)
})

/** The project with both tarballs installed (made by whichever test needs it first). */
let nativeDir
const nativeApp = () => (nativeDir ??= app('native', [platformTgz, main]))

withNpm('with the platform package it runs on the native backend', (t) => {
  if (platformTgz === undefined) return t.fail(`this check needs the ${platform} build (npm run build)`)
  t.deepEqual(tarFiles(platformTgz).sort(), ['README.md', `fairfs.${platform}.node`, 'package.json'])
  const dir = nativeApp()
  t.notRegex(installLogs.get(dir), /install.scripts?/i)
  const cjs = run(dir, 'cjs.cjs')
  t.deepEqual(cjs.out, { s: 'hello from fairfs', same: true, stream: 'hello from fairfs', backend: 'native', exported: 'native', nativeError: null, installed: true })
  t.is(cjs.warnings, 0, cjs.stderr)
  t.deepEqual(run(dir, 'esm.mjs').out, { s: 'hello from fairfs', p: 'hello from fairfs', backend: 'native' })
  typecheck(dir)
})

withTypeScript('TypeScript compiled for CommonJS (with and without esModuleInterop), node16 and bundlers imports it and runs', (t) => {
  if (platformTgz === undefined) return t.fail(`this check needs the ${platform} build (npm run build)`)
  // index.d.ts declares a default export: each way of compiling an import of it runs.
  const ts = compileAndRunTypeScript(t, nativeApp())
  const read = { viaDefault: 'hello from fairfs', named: 'hello from fairfs', viaNamespace: 'hello from fairfs', backends: ['native', 'native', 'native'] }
  t.deepEqual(ts, Object.fromEntries(Object.keys(ts).map((k) => [k, read])))
  t.is(Object.keys(ts).length, 5)
})

posixOnly(noGlibc, test)('the binary we build needs no glibc newer than 2.17', (t) => {
  if (!fs.existsSync(binary)) return t.fail(`this check needs the ${platform} build (npm run build)`)
  const r = spawnSync(process.execPath, [path.join(root, 'scripts/check-glibc-floor.mjs'), binary, '--floor', '2.17'], { encoding: 'utf8' })
  t.is(r.status, 0, r.stderr)
})
