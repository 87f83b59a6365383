#!/usr/bin/env node
// Other projects' own test suites, plainly and under fairfs: a maintainer tool, not part of
// `npm test` or CI (it needs checkouts of those projects and their npm dependencies).
//
//   node scripts/test-suites.mjs <dir> [name ...]
//
// <dir> holds one checkout per project, each `npm install`ed (see CONTRIBUTING.md, "Other
// projects' suites", for how to get them and which commits were last checked). Every
// subdirectory whose package.json `test` script runs mocha or vitest is run twice, with
// that script's own options but a JSON reporter: plainly, then with
// NODE_OPTIONS=--require <this repo>/register.js, which every Node process the suite starts
// (workers and child processes too) inherits. A test is known by its file and full title.
// Prints, per project, the tests passing plainly and those that pass plainly but not under
// fairfs (failing, skipped or missing); exits 1 if there is any such regression.

import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const register = fileURLToPath(new URL('../register.js', import.meta.url))
const TIMEOUT_MS = 20 * 60 * 1000

const [dirArg, ...only] = process.argv.slice(2)
if (!dirArg) {
  console.error('usage: node scripts/test-suites.mjs <dir of checkouts> [name ...]')
  process.exit(2)
}
const root = resolve(dirArg)

// The test script with its reporter replaced by a JSON one written to `out`.
function command(script, out) {
  const words = script.trim().split(/\s+/)
  if (words[0] === 'mocha') {
    const kept = words.filter((w, i) => !/^(-R|--reporter)(=|$)/.test(w) && !/^(-R|--reporter)$/.test(words[i - 1]))
    return { runner: 'mocha', args: [...kept, '--reporter', 'json', '--reporter-option', `output=${out}`] }
  }
  if (words[0] === 'vitest') {
    const kept = words.filter((w) => !w.startsWith('--reporter') && !w.startsWith('--outputFile'))
    return { runner: 'vitest', args: [...kept, '--reporter=json', `--outputFile=${out}`] }
  }
  return null
}

// tests: "file > full title" -> status ('passed', 'failed', 'pending', ...);
// errors: test files that failed as a whole (vitest: an error while loading one).
function results(runner, json, cwd) {
  const tests = new Map()
  const errors = []
  const add = (file, title, status) => {
    let key = `${relative(cwd, file || '')} > ${title}`
    for (let n = 2; tests.has(key); n++) key = `${key} #${n}`
    tests.set(key, status)
  }
  if (runner === 'mocha') {
    for (const t of json.passes) add(t.file, t.fullTitle, 'passed')
    for (const t of json.failures) add(t.file, t.fullTitle, 'failed')
    for (const t of json.pending) add(t.file, t.fullTitle, 'pending')
  } else {
    for (const f of json.testResults) {
      if (f.message) errors.push(`${relative(cwd, f.name)}: ${f.message}`)
      for (const t of f.assertionResults) add(f.name, [...t.ancestorTitles, t.title].filter(Boolean).join(' > '), t.status)
    }
  }
  return { tests, errors }
}

function run(dir, cmd, fairfs) {
  const tmp = mkdtempSync(join(tmpdir(), 'fairfs-suites-'))
  const out = join(tmp, 'results.json')
  const { runner, args } = command(cmd, out)
  const env = { ...process.env, PATH: join(dir, 'node_modules', '.bin') + delimiter + process.env.PATH }
  const base = (process.env.NODE_OPTIONS || '').replace(/--require[= ]\S*fairfs\S*register\S*/g, '').trim()
  env.NODE_OPTIONS = fairfs ? `${base} --require ${JSON.stringify(register)}`.trim() : base
  const started = Date.now()
  const child = spawnSync(args[0], args.slice(1), { cwd: dir, env, encoding: 'utf8', timeout: TIMEOUT_MS, maxBuffer: 1 << 28 })
  const seconds = ((Date.now() - started) / 1000).toFixed(1)
  const { tests, errors } = existsSync(out)
    ? results(runner, JSON.parse(readFileSync(out, 'utf8')), dir)
    : { tests: new Map(), errors: [] }
  rmSync(tmp, { recursive: true, force: true })
  for (const e of errors) console.log(`  ${fairfs ? 'fairfs' : 'plain'}: error in ${e}`)
  if (tests.size === 0 && errors.length === 0) {
    const why = child.error ? String(child.error) : `exit ${child.status}`
    console.log(`  ${fairfs ? 'fairfs' : 'plain'}: no results (${why}); last output:`)
    console.log((child.stderr + child.stdout).trim().split('\n').slice(-15).map((l) => `    ${l}`).join('\n'))
  }
  return { tests, seconds, status: child.status }
}

const count = (tests, status) => [...tests.values()].filter((s) => s === status).length

const projects = readdirSync(root, { withFileTypes: true })
  .filter((d) => d.isDirectory() && (only.length === 0 || only.includes(d.name)))
  .map((d) => join(root, d.name))
  .filter((dir) => existsSync(join(dir, 'package.json')))
  .sort()

const backend = spawnSync(process.execPath, ['-p', `require(${JSON.stringify(resolve(register, '..'))}).backend`], { encoding: 'utf8' })
console.log(`fairfs backend: ${backend.stdout.trim() || backend.stderr.trim()}  (node ${process.version})`)

let regressions = 0
for (const dir of projects) {
  const script = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).scripts?.test || ''
  const name = relative(root, dir)
  if (!command(script, 'x')) {
    console.log(`\n${name}: skipped, its test script is not mocha or vitest: ${script}`)
    continue
  }
  // A git work tree's HEAD, or the commit an exported snapshot (git archive) noted in .commit.
  const git = existsSync(join(dir, '.git')) && spawnSync('git', ['-C', dir, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).stdout
  const commit = (git || (existsSync(join(dir, '.commit')) ? readFileSync(join(dir, '.commit'), 'utf8') : '')).trim()
  console.log(`\n${name}${commit ? ` @ ${commit}` : ''}: ${script}`)
  const plain = run(dir, script, false)
  const fair = run(dir, script, true)
  const lost = [...plain.tests].filter(([k, s]) => s === 'passed' && fair.tests.get(k) !== 'passed').map(([k]) => k)
  for (const [label, r] of [['plain', plain], ['fairfs', fair]]) {
    console.log(`  ${label.padEnd(6)}: ${count(r.tests, 'passed')} passed, ${count(r.tests, 'failed')} failed, ` +
      `${r.tests.size - count(r.tests, 'passed') - count(r.tests, 'failed')} skipped (${r.seconds} s, exit ${r.status})`)
  }
  console.log(`  passing plainly but not under fairfs: ${lost.length}`)
  for (const k of lost) console.log(`    ${k}  [${fair.tests.get(k) ?? 'missing'}]`)
  regressions += lost.length
}
console.log(`\n${regressions} regression(s) under fairfs`)
process.exit(regressions ? 1 : 0)
