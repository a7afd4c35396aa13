'use strict';
// Loads the addon `npm run build` (or `npm run build:debug`) wrote beside
// this file: agent-context.<platform>.node, named as `napi build --platform`
// names it (agent-context.linux-x64-gnu.node, agent-context.darwin-arm64.node,
// agent-context.win32-x64-msvc.node, ...).

const fs = require('node:fs');
const path = require('node:path');

/** The platform names the addon may have here, most likely first. */
function platformNames() {
  const { platform, arch } = process;
  switch (platform) {
    case 'linux':
      return arch === 'arm'
        ? ['linux-arm-gnueabihf', 'linux-arm-musleabihf']
        : [`linux-${arch}-gnu`, `linux-${arch}-musl`];
    case 'win32':
      return [`win32-${arch}-msvc`, `win32-${arch}-gnu`];
    case 'darwin':
      return [`darwin-${arch}`, 'darwin-universal'];
    default:
      return [`${platform}-${arch}`];
  }
}

const files = platformNames().map((name) => path.join(__dirname, `agent-context.${name}.node`));
const file = files.find((candidate) => fs.existsSync(candidate));
if (!file) {
  throw new Error(
    `agent-context: no addon for this platform (${files.map((f) => path.basename(f)).join(' or ')} ` +
      `in ${__dirname}); build it from a clone with \`cd node && npm install && npm run build\` (Rust 1.94+)`,
  );
}

module.exports = require(file);
