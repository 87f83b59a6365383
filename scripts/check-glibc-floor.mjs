// Fails when a Linux gnu binary needs a newer glibc than the floor we promise.
//
//   node scripts/check-glibc-floor.mjs fairfs.linux-x64-gnu.node [--floor 2.17]
//
// Two ways a binary outgrows the floor, both read from its dynamic symbol table:
// * a symbol bound to a versioned glibc symbol newer than the floor (GLIBC_2.34's
//   `pthread_create`, say), which the dynamic loader refuses outright;
// * a strong undefined symbol with no version at all, other than N-API's (Node
//   provides those). That happens when the sysroot we linked against lacks the
//   function (preadv2 and gettid are missing from glibc 2.17's), so the linker left
//   it for load time, where an old glibc fails to resolve it.
import { execFileSync } from 'node:child_process'

const args = process.argv.slice(2)
const floorAt = args.indexOf('--floor')
const floor = floorAt >= 0 ? args.splice(floorAt, 2)[1] : '2.17'
if (args.length !== 1) {
  console.error('usage: check-glibc-floor.mjs <binary> [--floor 2.17]')
  process.exit(2)
}
const file = args[0]

const cmp = (a, b) => {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number))
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0)
  }
  return 0
}

const table = execFileSync('readelf', ['-W', '--dyn-syms', file], { encoding: 'utf8' })
const problems = []
let newest = '0'
for (const line of table.split('\n')) {
  // Num: Value Size Type Bind Vis Ndx Name[@version]
  const f = line.trim().split(/\s+/)
  if (f.length < 8 || f[6] !== 'UND' || !f[7]) continue
  const [name, version] = f[7].split(/@+/)
  const glibc = /^GLIBC_([\d.]+)/.exec(version ?? '')
  if (glibc) {
    if (cmp(glibc[1], newest) > 0) newest = glibc[1]
    if (cmp(glibc[1], floor) > 0) problems.push(`${name} needs GLIBC_${glibc[1]}`)
  } else if (!version && f[4] === 'GLOBAL' && !/^(napi_|node_api_)/.test(name)) {
    problems.push(`${name} is undefined and unversioned: it would not resolve on an older glibc`)
  }
}

if (problems.length > 0) {
  console.error(`${file}: above the glibc ${floor} floor:\n  ${problems.join('\n  ')}`)
  process.exit(1)
}
console.log(`${file}: newest glibc symbol version ${newest}, within the ${floor} floor`)
