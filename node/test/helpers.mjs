// Shared by the tests: the bundled sessions, the agent-context CLI every
// result is compared with, and a generated agent loop.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const NODE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const ROOT = path.resolve(NODE_DIR, '..');
export const DATA = fs
  .readdirSync(path.join(ROOT, 'data'))
  .filter((name) => name.endsWith('.json'))
  .sort()
  .map((name) => path.join(ROOT, 'data', name));

/** The CLI to compare with: $AGENT_CONTEXT_BIN, else the newest build under
 * the Cargo target directory. */
function cliPath() {
  const given = process.env.AGENT_CONTEXT_BIN;
  if (given) return given;
  const target = process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target');
  const found = ['release', 'debug']
    .map((profile) => path.join(target, profile, 'agent-context'))
    .filter((file) => fs.existsSync(file))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
  if (found.length === 0) {
    throw new Error('no agent-context binary: run `cargo build` at the repository root, or set AGENT_CONTEXT_BIN');
  }
  return found[0];
}

export const CLI = cliPath();

/** Runs `agent-context ARGS`: {status, stdout, stderr}; throws on a
 * non-zero exit unless `check` is false. */
export function cli(args, { input, check = true } = {}) {
  const done = spawnSync(CLI, args.map(String), { input, encoding: 'utf8', maxBuffer: 1 << 30 });
  if (done.error) throw done.error;
  if (check && done.status !== 0) {
    throw new Error(`agent-context ${args.join(' ')} exited ${done.status}: ${done.stderr}`);
  }
  return done;
}

/** What `agent-context ARGS` prints, parsed. */
export function cliJson(args, options) {
  return JSON.parse(cli(args, options).stdout);
}

/** The output of a build command: parsed JSON, or the text of `--output text`. */
export function cliOutput(args, output) {
  const done = cli([...args, '--output', output]);
  return { body: output === 'text' ? done.stdout : JSON.parse(done.stdout), stderr: done.stderr };
}

/** The warnings the CLI wrote (`warning: …` lines). */
export function cliWarnings(stderr) {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('warning: '))
    .map((line) => line.slice('warning: '.length));
}

/** A failed CLI run: its exit status and the message after `error: `. */
export function cliError(args, options) {
  const done = cli(args, { ...options, check: false });
  if (done.status === 0) throw new Error(`agent-context ${args.join(' ')} succeeded`);
  const first = done.stderr.split('\n')[0];
  if (!first.startsWith('error: ')) throw new Error(`unexpected stderr: ${done.stderr}`);
  return { status: done.status, message: first.slice('error: '.length), stdout: done.stdout };
}

/** A fresh temporary directory, removed when the process exits. */
export function tempDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-context-node-'));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A file in a fresh temporary directory holding `text`. */
export function tempFile(name, text) {
  const file = path.join(tempDir(), name);
  fs.writeFileSync(file, text);
  return file;
}

/** Copies a SQLite store (and its WAL) so the CLI can act on the same state. */
export function copyStore(db, copy) {
  for (const suffix of ['', '-wal', '-shm']) {
    if (fs.existsSync(db + suffix)) fs.copyFileSync(db + suffix, copy + suffix);
  }
  return copy;
}

/** One step of an agent loop: a user message, a tool call, its result of
 * `lines` lines, and a reply. */
export function turn(i, lines = 300) {
  const call = `call_${i}`;
  const result = Array.from({ length: lines }, (_, n) => `line ${i}.${n}: let x_${n} = ${n * i};`).join('\n');
  return [
    { id: `u${i}`, kind: 'agent', role: 'user', text: `Step ${i}: read the next file.` },
    { id: `c${i}`, kind: 'workflow', action: 'tool_call', tool: 'read_file', call_id: call, data: { path: `src/m${i}.rs` } },
    { id: `r${i}`, kind: 'environment', tool: 'read_file', call_id: call, success: true, text: result },
    { id: `a${i}`, kind: 'agent', role: 'assistant', text: `Read m${i}.rs; moving on.` },
  ];
}

/** The chunks of `steps` turns from `start`. */
export function loopChunks(steps, start = 0, lines = 300) {
  return Array.from({ length: steps }, (_, k) => turn(start + k, lines)).flat();
}

/** Options that collect the warnings instead of emitting them. */
export function collecting() {
  const warnings = [];
  return { warnings, options: { onWarning: (message) => warnings.push(message) } };
}

export const quiet = { onWarning: () => {} };
