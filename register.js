'use strict'
// `require('fairfs/register')` or `node -r fairfs/register app.js`: patch node:fs at startup.
require('./index.js').install()
