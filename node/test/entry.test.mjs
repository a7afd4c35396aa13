// The CommonJS and ES module entry points load and export the same
// objects, by path and by the package's name; index.d.ts declares them
// all, and TypeScript accepts the uses of test/types/check.mts and
// refuses its misuses.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';

import * as esm from '../index.mjs';
import { NODE_DIR, tempDir } from './helpers.mjs';

const require = createRequire(import.meta.url);
const cjs = require('../index.cjs');

const NAMES = [
  'BudgetExceeded', 'ChatError', 'CompactionError', 'ContextBuilder', 'ContextError', 'Engine', 'InputError',
  'OUTPUTS', 'Session', 'StoreError', 'build', 'buildAsync', 'count', 'fromAiSdk', 'toAiSdk', 'version',
];

test('CommonJS and ESM export the same names and the same objects', () => {
  assert.deepEqual(Object.keys(cjs).sort(), NAMES);
  assert.deepEqual(Object.keys(esm).filter((name) => name !== 'default').sort(), NAMES);
  for (const name of NAMES) assert.equal(esm[name], cjs[name], name);
  assert.equal(esm.default, cjs);
  assert.equal(cjs.version, JSON.parse(fs.readFileSync(path.join(NODE_DIR, 'package.json'), 'utf8')).version);
  // An error thrown through one entry is an instance of the other's class.
  assert.throws(() => cjs.build('{'), esm.InputError);
});

test("the package's name resolves to the entries of package.json's exports", async () => {
  const byName = await import('agent-context');
  assert.equal(byName.build, esm.build);
  assert.equal(require('agent-context'), cjs);
  const manifest = JSON.parse(fs.readFileSync(path.join(NODE_DIR, 'package.json'), 'utf8'));
  assert.deepEqual(manifest.exports['.'], { types: './index.d.ts', import: './index.mjs', require: './index.cjs' });
  for (const file of ['index.cjs', 'index.mjs', 'index.d.ts', 'native.cjs']) {
    assert.ok(manifest.files.includes(file), file);
  }
  // In a fresh process, each loads alone.
  for (const code of [
    "const ac = require('agent-context'); if (ac.count('hello world') !== 2) process.exit(1)",
    "import('agent-context').then((ac) => { if (ac.count('hello world') !== 2) process.exit(1) })",
  ]) {
    const done = spawnSync(process.execPath, ['-e', code], { cwd: NODE_DIR, encoding: 'utf8' });
    assert.equal(done.status, 0, done.stderr);
  }
});

test('index.d.ts declares every export, and TypeScript checks its uses', () => {
  const types = fs.readFileSync(path.join(NODE_DIR, 'index.d.ts'), 'utf8');
  const declared = new Set([...types.matchAll(/^export (?:const|function|class) (\w+)/gm)].map((m) => m[1]));
  assert.deepEqual([...declared].sort(), NAMES);
  const tsc = path.join(NODE_DIR, 'node_modules', 'typescript', 'bin', 'tsc');
  const args = ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--lib', 'es2022'];
  const done = spawnSync(process.execPath, [tsc, ...args, 'test/types/check.mts'], { cwd: NODE_DIR, encoding: 'utf8' });
  assert.equal(done.status, 0, done.stdout + done.stderr);
});

test('without a built addon, loading says how to build one', () => {
  const dir = tempDir();
  fs.copyFileSync(path.join(NODE_DIR, 'native.cjs'), path.join(dir, 'native.cjs'));
  assert.throws(() => createRequire(path.join(dir, 'x.cjs'))('./native.cjs'), (error) => {
    assert.match(error.message, /^agent-context: no addon for this platform \(agent-context\.[a-z0-9-]+\.node/);
    assert.match(error.message, /npm install && npm run build/);
    return true;
  });
});
