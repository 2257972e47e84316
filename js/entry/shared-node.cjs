'use strict';
// Node (CommonJS `require`), breakwater/shared.
const api = require('./shared-api.cjs');
api.setSharedGlue(require('../node-shared/breakwater_shared.js'));
module.exports = api;
