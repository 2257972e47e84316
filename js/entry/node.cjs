'use strict';
// Node (CommonJS `require`): the same glue as the ESM entry, loaded synchronously.
const api = require('./api.cjs');
api.setGlue(require('../node/breakwater.js'));
module.exports = api;
