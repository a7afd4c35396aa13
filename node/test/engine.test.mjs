// Engine on a temporary SQLite file: every verb, each equal to the
// `agent-context chat` verb on the same store.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import * as ac from '../index.mjs';
import { DATA, cli, cliJson, cliWarnings, collecting, copyStore, loopChunks, quiet, tempDir, tempFile, turn } from './helpers.mjs';

const CODING = DATA.find((file) => file.endsWith('coding-agent.json'));

async function store() {
  const db = path.join(tempDir(), 'agent.db');
  const engine = new ac.Engine(db, 'run-42');
  const out = await engine.append(JSON.parse(fs.readFileSync(CODING, 'utf8')));
  assert.deepEqual(out, { chat: 'run-42', branch: 'main', head: 40, appended: 40 });
  return { db, engine };
}

test('build equals chat build for every output, async and in place', async () => {
  const { db, engine } = await store();
  const flags = ['--max-tokens', '4000', '--reserve', '500', '--cap', 'tool_result=800'];
  const options = { maxTokens: 4000, reserve: 500, caps: { tool_result: 800 } };
  let n = 0;
  for (const output of ac.OUTPUTS) {
    // A build keeps a record the branch's next build extends: the CLI
    // builds a copy of the store, so both start from the same one.
    const copy = copyStore(db, path.join(path.dirname(db), `copy-${n++}.db`));
    const done = cli(['chat', 'build', '--db', copy, '--chat', 'run-42', ...flags, '--output', output]);
    const expected = output === 'text' ? done.stdout : JSON.parse(done.stdout);
    const seen = collecting();
    // Async and in place in turn; each after the first extends the record
    // the one before kept, and so does the CLI on its copy.
    const given = { ...options, output, ...seen.options };
    const got = n % 2 ? await engine.build(given) : engine.buildSync(given);
    assert.deepEqual(got, expected, output);
    assert.deepEqual(seen.warnings, cliWarnings(done.stderr), output);
    if (output === 'report') assert.equal(got.previous_build, n === 1 ? 'none_kept' : 'extended');
  }
  // The last output built otherwise: the next report starts cold, the one
  // after extends it.
  assert.equal((await engine.build(options)).previous_build, 'other_settings');
  const first = await engine.build(options);
  assert.equal(first.previous_build, 'extended');
  const copy = copyStore(db, path.join(path.dirname(db), 'copy-prev.db'));
  const saved = tempFile('report.json', JSON.stringify(first));
  const withPrevious = cliJson(['chat', 'build', '--db', copy, '--chat', 'run-42', ...flags, '--previous', saved]);
  assert.deepEqual(await engine.build({ ...options, previous: first }), withPrevious);
  assert.deepEqual(withPrevious.cache, { stable_prefix_tokens: first.messages.reduce((sum, m) => sum + m.tokens, 0), broke_at: null });
});

test('each engine build returns the prompts of a session', async () => {
  const engine = new ac.Engine(path.join(tempDir(), 'loop.db'), 'loop');
  const session = new ac.Session(new ac.ContextBuilder({ maxTokens: 12000, reserve: 1000 }));
  for (let i = 0; i < 30; i++) {
    if (i % 2) await engine.append(turn(i));
    else engine.appendSync(turn(i));
    session.extend(turn(i));
    const got = i % 3 ? await engine.build({ maxTokens: 12000, reserve: 1000 }) : engine.buildSync({ maxTokens: 12000, reserve: 1000 });
    const expected = session.build();
    assert.deepEqual(got.messages, expected.messages, `turn ${i}`);
    assert.equal(got.stable_prefix_tokens, expected.stable_prefix_tokens, `turn ${i}`);
    assert.equal(got.previous_build, i === 0 ? 'none_kept' : 'extended');
  }
});

test('export equals chat export, and builds as build does', async () => {
  const { db, engine } = await store();
  const exported = await engine.export();
  assert.deepEqual(exported, cliJson(['chat', 'export', '--db', db, '--chat', 'run-42']));
  const built = await engine.build({ maxTokens: 5000 });
  assert.equal(built.previous_build, 'none_kept');
  delete built.previous_build;
  assert.deepEqual(built, ac.build(exported, { maxTokens: 5000 }));
});

test('checkpoint, restore, fork, rewind, switch, branches and chats', async () => {
  const { db, engine } = await store();
  assert.deepEqual(await engine.checkpoint('cp'), { chat: 'run-42', checkpoint: 'cp', node: 40 });
  await assert.rejects(engine.checkpoint('cp'), (e) => e instanceof ac.ChatError && /pass --force/.test(e.message));
  assert.deepEqual(await engine.checkpoint('cp', { force: true }), { chat: 'run-42', checkpoint: 'cp', node: 40 });
  await engine.append([{ id: 'u99', kind: 'agent', role: 'user', text: 'Try again.' }]);
  assert.equal((await engine.export()).chunks.length, 41);
  assert.deepEqual(await engine.restore('cp'), { chat: 'run-42', branch: 'main-v2', head: 40 });
  assert.equal((await engine.export()).chunks.length, 40);
  assert.deepEqual(await engine.fork('try-2'), { chat: 'run-42', branch: 'try-2', head: 40 });
  const rewound = await engine.rewind('c10', { name: 'retry' });
  assert.equal(rewound.branch, 'retry');
  assert.equal((await engine.export()).chunks.length, 9);
  assert.equal((await engine.switch('main')).head, 41);
  const branches = await engine.branches();
  assert.deepEqual(branches, cliJson(['chat', 'branches', '--db', db, '--chat', 'run-42']));
  assert.deepEqual(new Set(branches.branches.map((b) => b.name)), new Set(['main', 'main-v2', 'try-2', 'retry']));
  assert.deepEqual(branches.checkpoints, [{ name: 'cp', node: 40 }]);
  const chats = await engine.chats();
  assert.deepEqual(chats, cliJson(['chat', 'list', '--db', db]));
  assert.equal(chats.chats[0].id, 'run-42');
  const pinned = new ac.Engine(db, 'run-42', { branch: 'retry' });
  assert.equal(pinned.branch, 'retry');
  assert.equal(engine.branch, null);
  assert.equal((await pinned.export()).chunks.length, 9);
  assert.deepEqual([engine.db, engine.chat], [db, 'run-42']);
  const named = await engine.restore('cp', { name: 'from-cp' });
  assert.equal(named.branch, 'from-cp');
});

test('append takes every shape, and its flags', async () => {
  const engine = new ac.Engine(path.join(tempDir(), 's.db'), 'c');
  assert.equal((await engine.append({ id: 'u1', kind: 'agent', role: 'user', text: 'a' })).appended, 1);
  assert.equal((await engine.append('{"id": "a1", "kind": "agent", "role": "assistant", "text": "b"}')).head, 2);
  const jsonl = '{"id": "u2", "kind": "agent", "role": "user", "text": "c"}\n{"id": "a2", "kind": "agent", "role": "assistant", "text": "d"}\n';
  assert.equal(engine.appendSync(jsonl).appended, 2);
  const replaced = await engine.append({ id: 'a3', kind: 'agent', role: 'assistant', text: 'e' }, { replaceLastAssistant: true });
  assert.equal(replaced.replaced, true);
  assert.equal((await engine.append({ system_prompt: 'Be brief.', chunks: [] })).appended, 0);
  assert.equal((await engine.export()).system_prompt, 'Be brief.');
  await engine.append({ chunks: [] }, { clearSystem: true, model: 'gpt-4.1' });
  assert.equal((await engine.export()).system_prompt, undefined);
  await assert.rejects(engine.append([], { replaceLast: true }), { name: 'InputError', message: /^append\(\): unknown option "replaceLast"/ });
  await assert.rejects(engine.append([], { clearSystem: 'yes' }), { name: 'InputError', message: 'clearSystem must be a boolean, not string' });
  await assert.rejects(engine.append('{"id": "x", "kind": "agent", "role": "user", "text": "\\ud83e"}'), /surrogate/);
  assert.equal((await engine.append('{"id": "x", "kind": "agent", "role": "user", "text": "\\ud83e"}', { lossyUnicode: true })).appended, 1);
});

const SETTINGS = { maxTokens: 16000, reserve: 500, caps: { tool_result: 2000 } };
const FLAGS = ['--max-tokens', '16000', '--reserve', '500', '--cap', 'tool_result=2000'];
const SUMMARY = 'Goal: read every module. Progress: read m0 to m20; nothing is wrong yet.';
const NATIVE = {
  anthropic: { type: 'compaction', content: 'The agent read m0 to m20.' },
  openai: { type: 'compaction', encrypted_content: 'gAAAAB-opaque==', id: 'cmp_1' },
};

async function loopStore() {
  const db = path.join(tempDir(), 'loop.db');
  const engine = new ac.Engine(db, 'loop');
  assert.equal((await engine.append(loopChunks(24))).head, 96);
  return { db, engine };
}

test('planCompaction equals chat compact --plan, for every request format', async () => {
  const { db, engine } = await loopStore();
  for (const output of ['messages', 'openai', 'anthropic']) {
    const got = await engine.planCompaction({
      ...SETTINGS, keepTokens: 3000, summaryTokens: 1000, summarizerMaxTokens: 40000, output, instructions: 'Summarize tersely.',
    });
    const expected = cliJson([
      'chat', 'compact', '--db', db, '--chat', 'loop', '--plan', ...FLAGS, '--keep-tokens', '3000', '--summary-tokens', '1000',
      '--summarizer-max-tokens', '40000', '--output', output, '--instructions', 'Summarize tersely.',
    ]);
    assert.deepEqual(got, expected, output);
    assert.ok(got.plan.startsWith('acp1.'));
  }
  assert.deepEqual(await engine.planCompaction(SETTINGS), cliJson(['chat', 'compact', '--db', db, '--chat', 'loop', '--plan', ...FLAGS]));
  assert.equal((await engine.export()).chunks.length, 96, 'planning writes nothing');
  await assert.rejects(engine.planCompaction({ output: 'report' }), /not a request format/);
  await assert.rejects(engine.planCompaction({ explain: true }), { name: 'InputError', message: /^planCompaction\(\): unknown option "explain"/ });
  await assert.rejects(engine.planCompaction({ keepTokens: true }), { name: 'InputError', message: 'keepTokens must be an integer, not boolean' });
  await assert.rejects(engine.planCompaction({ instructions: 'x'.repeat(100), maxInputBytes: 10 }), /larger than the limit/);
  await assert.rejects(engine.applyCompaction('acp1.x', SUMMARY, { output: 'openai' }), { name: 'InputError', message: /^applyCompaction\(\): unknown option "output"; the options are: native, model/ });
});

test('applyCompaction equals chat compact --apply; the build shows the summary; a plan applies once', async () => {
  const { db, engine } = await loopStore();
  const plan = await engine.planCompaction({ ...SETTINGS, keepTokens: 3000 });
  const copy = copyStore(db, path.join(path.dirname(db), 'copy.db'));
  const summaryFile = tempFile('summary.txt', SUMMARY);
  const nativeFile = tempFile('native.json', JSON.stringify(NATIVE));
  const expected = cliJson(['chat', 'compact', '--db', copy, '--chat', 'loop', ...FLAGS, '--apply', plan.plan, '--summary', summaryFile, '--native', nativeFile]);
  const applied = await engine.applyCompaction(plan.plan, SUMMARY, { ...SETTINGS, native: NATIVE });
  assert.deepEqual(applied, expected);
  assert.equal(applied.head, 97);
  assert.deepEqual(await engine.export(), cliJson(['chat', 'export', '--db', copy, '--chat', 'loop']));
  assert.deepEqual((await engine.export()).chunks.at(-1).native, NATIVE);
  const report = await engine.build(SETTINGS);
  assert.deepEqual(report.compaction, { id: applied.compaction, covers: plan.covers, chunks: plan.folded.chunks, tokens: plan.folded.tokens });
  assert.ok(report.messages.some((m) => m.content.includes(SUMMARY)));
  await assert.rejects(engine.applyCompaction(plan, SUMMARY, SETTINGS), (e) => e instanceof ac.CompactionError && /another compaction/.test(e.message));
  // Under other settings, forged or empty, a plan is refused and nothing is written.
  await engine.append(loopChunks(6, 24));
  const again = await engine.planCompaction({ ...SETTINGS, keepTokens: 3000 });
  const length = (await engine.export()).chunks.length;
  await assert.rejects(engine.applyCompaction(again, SUMMARY, { ...SETTINGS, maxTokens: 20000 }), (e) => e instanceof ac.CompactionError && /other settings/.test(e.message));
  await assert.rejects(engine.applyCompaction(again.plan.replace('acp1.', 'acp1.00'), SUMMARY, SETTINGS), ac.CompactionError);
  await assert.rejects(engine.applyCompaction(again, '   ', SETTINGS), (e) => e instanceof ac.CompactionError && /empty/.test(e.message));
  await assert.rejects(engine.applyCompaction(again, SUMMARY, { ...SETTINGS, native: [1, 2] }), ac.InputError);
  await assert.rejects(engine.applyCompaction(again, SUMMARY, { ...SETTINGS, native: { google: {} } }), /native\.google/);
  assert.equal((await engine.export()).chunks.length, length);
  const second = await engine.applyCompaction(again, 'Read m0 to m26.', { ...SETTINGS, native: JSON.stringify({ openai: NATIVE.openai }) });
  assert.equal((await engine.build(SETTINGS)).compaction.id, second.compaction);
});

test('compactAt reports compaction_due as chat build --compact-at does', async () => {
  const { db, engine } = await loopStore();
  for (const [value, flag] of [[0.9, '0.9'], [10, '10'], ['1.0', '1.0'], [1000000000, '1000000000']]) {
    const copy = copyStore(db, path.join(path.dirname(db), `due-${flag}.db`));
    const expected = cliJson(['chat', 'build', '--db', copy, '--chat', 'loop', ...FLAGS, '--compact-at', flag]);
    const got = await engine.build({ ...SETTINGS, compactAt: value });
    delete got.previous_build;
    delete expected.previous_build;
    assert.deepEqual(got, expected, flag);
  }
  assert.equal((await engine.build({ ...SETTINGS, compactAt: 0.9 })).compaction_due, true);
  assert.equal((await engine.build({ ...SETTINGS, compactAt: 1000000000 })).compaction_due, false);
});
