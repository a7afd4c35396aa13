'use strict';
// Loads the addon `npm run build` (or `npm run build:debug`) wrote beside
// this file: agent-context.<platform>.node, named as `napi build --platform`
// names it (agent-context.linux-x64-gnu.node, agent-context.darwin-arm64.node,
// agent-context.win32-x64-msvc.node, ...).

const path = require('node:path');

function isMusl() {
  if (process.platform !== 'linux') return false;
  try {
    const report = process.report && process.report.getReport();
    return !(report && report.header && report.header.glibcVersionRuntime);
  } catch {
    return false;
  }
}

function platformName() {
  const { platform, arch } = process;
  switch (platform) {
    case 'linux':
      if (arch === 'arm') return `linux-arm-${isMusl() ? 'musleabihf' : 'gnueabihf'}`;
      return `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`;
    case 'win32':
      return `win32-${arch}-msvc`;
    default:
      // darwin-arm64, darwin-x64, freebsd-x64, ...
      return `${platform}-${arch}`;
  }
}

const file = path.join(__dirname, `agent-context.${platformName()}.node`);
let addon;
try {
  addon = require(file);
} catch (error) {
  if (error && error.code === 'MODULE_NOT_FOUND') {
    const missing = new Error(
      `agent-context: no addon for this platform at ${file}; build it from a clone ` +
        'with `cd node && npm install && npm run build` (Rust 1.94+)',
    );
    missing.cause = error;
    throw missing;
  }
  throw error;
}

module.exports = addon;
