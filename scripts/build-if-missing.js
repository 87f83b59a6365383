// `prepare` hook: in a clone of the repository, `npm install` builds the addon when no
// binary for this platform loads yet.
//
// npm runs `prepare` in the project being developed (and for git and folder
// dependencies). It never reaches users: the packages a release publishes are packed by
// scripts/pack.mjs (`npm run pack:local`), which leaves `scripts` out of package.json,
// and `npm pack` / `npm publish` of the clone itself refuse. An installed fairfs has no
// lifecycle script at all: the loader picks the platform package (an
// optionalDependency), and where none fits fairfs runs on its node:fs backend.
'use strict'
const { execFileSync } = require('node:child_process')
const path = require('node:path')

const root = path.join(__dirname, '..')

function loads() {
  try {
    require(path.join(root, 'binding.js'))
    return true
  } catch {
    return false
  }
}

if (process.env.FAIRFS_SKIP_BUILD || loads()) process.exit(0)
console.log('fairfs: no native binary for this platform yet, compiling it from source (needs cargo)')
execFileSync(process.execPath, [path.join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' })
