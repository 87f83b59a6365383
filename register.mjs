// `import 'fairfs/register'` or `node --import fairfs/register app.mjs`: patch node:fs at startup.
import fairfs from './index.js'

fairfs.install()
