// Each error class, with the CLI's message (what it prints after `error: `)
// and exit status; options of the wrong type or name are InputErrors
// naming them; nothing crashes the process.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import * as ac from '../index.mjs';
import { DATA, cliError, loopChunks, tempDir, tempFile } from './helpers.mjs';

const USER = { id: 'u1', kind: 'agent', role: 'user', text: 'Fix the test' };

/** Asserts `work` throws an instance of `Class` (and so of ContextError
 * and Error) with the CLI's message and exit status; returns the error. */
function throwsLikeCli(work, Class, expected) {
  let thrown;
  assert.throws(work, (error) => {
    thrown = error;
    return true;
  });
  assert.ok(thrown instanceof Class, `${thrown && thrown.name}: ${thrown && thrown.message}`);
  assert.ok(thrown instanceof ac.ContextError && thrown instanceof Error);
  assert.equal(thrown.name, Class.name);
  assert.equal(thrown.message, expected.message);
  assert.equal(thrown.exitCode, expected.status);
  return thrown;
}

async function rejectsLikeCli(promise, Class, expected) {
  let thrown;
  await assert.rejects(promise, (error) => {
    thrown = error;
    return true;
  });
  assert.ok(thrown instanceof Class, `${thrown && thrown.name}: ${thrown && thrown.message}`);
  assert.equal(thrown.message, expected.message);
  assert.equal(thrown.exitCode, expected.status);
  return thrown;
}

const BAD_SESSIONS = [
  '{"chunks": [{"id": "a", "kind": "agent", "role": "user", "text": "x", "bogus": 1}]}',
  '{"chunks": [{"id": "a", "kind": "nope", "text": "x"}]}',
  '{"chunks": [{"id": "a", "kind": "agent", "text": "no role"}]}',
  '{"chunks": [{"id": "a", "kind": "agent", "role": "user", "text": "x"},\n {"id": "a", "kind": "agent", "role": "user", "text": "dup"}]}',
  '{"chunks": [{"id": "a", "kind": "agent", "role": "user", "text": "x", "text": "y"}]}',
  '{"chunks": [',
  '{"chunks": [{"id": "a", "kind": "agent", "role": "user", "text": "\\ud83e"}]}',
  '{"system_prompt": 5}',
  '{"chunks": [{"id": "a", "kind": "environment", "text": "x", "priority": 99999999999999999999}]}',
  '{"fragments": [{"name": "x"}]}',
];

test('bad sessions are InputErrors with the CLI message and exit status', () => {
  for (const text of BAD_SESSIONS) {
    const expected = cliError(['build', tempFile('session.json', text)]);
    assert.equal(expected.status, 2, text);
    throwsLikeCli(() => ac.build(text), ac.InputError, expected);
  }
});

test('a budget too small is BudgetExceeded with its figures', () => {
  const session = { system_prompt: 'You are careful. '.repeat(200), chunks: [USER] };
  const file = tempFile('session.json', JSON.stringify(session));
  const expected = cliError(['build', file, '--max-tokens', '300', '--reserve', '20']);
  assert.equal(expected.status, 1);
  const error = throwsLikeCli(() => ac.build(session, { maxTokens: 300, reserve: 20 }), ac.BudgetExceeded, expected);
  const [, required, available] = expected.message.match(/needs (\d+) tokens but only (\d+)/).map(Number);
  assert.deepEqual([error.required, error.available, error.maxTokens, error.reserve], [required, available, 300, 20]);
  assert.ok(error.required > 280 && error.available === 280);
  assert.ok(!(error instanceof ac.InputError));
});

test('bad option values are InputErrors; with a flag of the CLI, its message', () => {
  const session = { chunks: [USER] };
  const file = tempFile('session.json', JSON.stringify(session));
  const cases = [
    [{ caps: { nosuchtag: 100 } }, ['--cap', 'nosuchtag=100']],
    [{ lowWater: 2.0 }, ['--low-water', '2.0']],
    [{ model: '' }, ['--model', '']],
    [{ contextManagement: { edits: [{ type: 'clear_everything' }] } }, ['--context-management', '{"edits": [{"type": "clear_everything"}]}']],
    [{ contextManagement: '/no/such/file.json' }, ['--context-management', '/no/such/file.json']],
    [{ previous: { not: 'a report' } }, null],
  ];
  for (const [options, flags] of cases) {
    if (flags) {
      throwsLikeCli(() => ac.build(session, options), ac.InputError, cliError(['build', file, ...flags]));
    } else {
      assert.throws(() => ac.build(session, options), (e) => e instanceof ac.InputError && e.exitCode === 2 && /`previous`/.test(e.message));
    }
  }
  const messages = [
    [{ escape: 'bogus' }, 'invalid value for escape: unknown escape mode "bogus"; expected structural, xml or none'],
    [{ output: 'yaml' }, /^invalid value for output: unknown output "yaml"; expected one of: report, openai/],
    [{ excludeKinds: ['nope'] }, /^invalid value for excludeKinds: unknown kind "nope"/],
    [{ caps: { tool_result: 'lots' } }, /^invalid value for caps: "lots" is not a token count/],
    [{ threads: 0 }, /^invalid value for threads: "0" is not a number of threads; give 1 to/],
    [{ estimateFactor: 0.5 }, /^invalid value for estimateFactor: /],
    [{ maxTokens: -1 }, 'invalid value for maxTokens: -1 is not a number of tokens (a whole number, 0 or more)'],
    [{ maxTokens: 1.5 }, 'invalid value for maxTokens: 1.5 is not a number of tokens (a whole number, 0 or more)'],
    [{ compactAt: -1 }, /^invalid value for compactAt: "-1" is neither a number of tokens/],
    [{ maxInputBytes: 0 }, 'invalid value for maxInputBytes: expected a size of at least one byte; found 0'],
  ];
  for (const [options, message] of messages) {
    assert.throws(() => ac.build(session, options), (e) => e instanceof ac.InputError && e.exitCode === 2 && (typeof message === 'string' ? e.message === message : message.test(e.message)), JSON.stringify(options));
  }
});

test('options of the wrong type or name are InputErrors naming them', () => {
  const session = { chunks: [USER] };
  const cases = [
    [{ maxTokens: '100' }, 'maxTokens must be an integer, not string'],
    [{ reserve: true }, 'reserve must be an integer, not boolean'],
    [{ groupFragments: 'yes' }, 'groupFragments must be a boolean, not string'],
    [{ explain: 1 }, 'explain must be a boolean, not number'],
    [{ lowWater: '0.5' }, 'lowWater must be a number, not string'],
    [{ caps: 'tool_result=5' }, 'caps must be an object {name: tokens} or an array of "NAME=N", not string'],
    [{ caps: { tool_result: true } }, 'caps["tool_result"] must be a number of tokens or null, not boolean'],
    [{ excludeKinds: 5 }, "excludeKinds must be a kind's name or an array of them, not number"],
    [{ model: 4 }, 'model must be a string, not number'],
    [{ contextManagement: [1] }, 'contextManagement must be an object, its JSON text or a file path, not array'],
    [{ compactAt: true }, 'compactAt must be a number or its text, not boolean'],
    [{ threads: '2' }, 'threads must be an integer, not string'],
    [{ lossyUnicode: 'yes' }, 'lossyUnicode must be a boolean, not string'],
    [{ previous: 5 }, "previous must be a build's report (an object) or its JSON text, not number"],
    [{ onWarning: 'print' }, 'onWarning must be a function, not string'],
    [{ maxTokens: 10n }, 'maxTokens cannot be bigint: give a JSON value'],
    [{ maxToken: 100 }, /^build\(\): unknown option "maxToken"; the options are: previous, lossyUnicode, onWarning, onExplain, model, maxTokens,/],
  ];
  for (const [options, message] of cases) {
    assert.throws(
      () => ac.build(session, options),
      (e) => e instanceof ac.InputError && e.exitCode === 2 && (typeof message === 'string' ? e.message === message : message.test(e.message)),
      message.toString(),
    );
  }
  assert.throws(() => ac.build(session, 'maxTokens=5'), { name: 'InputError', message: 'options must be an object, not string' });
  assert.throws(() => new ac.ContextBuilder({ previous: {} }), /previous is an option of a single build/);
  assert.throws(() => new ac.ContextBuilder().withOptions({ previous: {} }), ac.InputError);
  assert.throws(() => new ac.ContextBuilder().build(session, { maxTokens: 5 }), { name: 'InputError', message: 'build(): unknown option "maxTokens"; the options are: output, previous, lossyUnicode, onWarning, onExplain' });
  assert.throws(() => new ac.Session().build({ previous: {} }), ac.InputError);
});

test('any session JSON cannot hold, or that is no session, is an InputError', () => {
  const cyclic = { chunks: [] };
  cyclic.chunks.push(cyclic);
  for (const value of ['not json', '', 'null', '[1, 2]', 42, null, undefined, { chunks: 'x' }, cyclic, { chunks: [{ ...USER, n: 1n }] }, Buffer.from([0xff, 0xfe])]) {
    assert.throws(() => ac.build(value), (e) => e instanceof ac.InputError && e.exitCode === 2, String(value));
  }
  assert.throws(() => ac.build(undefined), { message: 'session cannot be written as JSON: it is undefined' });
  // A session given as UTF-8 bytes reads as its text.
  const text = fs.readFileSync(DATA[0], 'utf8');
  assert.deepEqual(ac.build(Buffer.from(text), { maxTokens: 4000 }), ac.build(text, { maxTokens: 4000 }));
});

test('lossyUnicode reads a lone surrogate as U+FFFD', () => {
  const text = '{"chunks": [{"id": "a", "kind": "agent", "role": "user", "text": "half \\ud83e"}]}';
  assert.throws(() => ac.build(text), (e) => e instanceof ac.InputError && /surrogate/.test(e.message));
  const out = ac.build(text, { lossyUnicode: true, output: 'openai' });
  assert.ok(out.messages[0].content.includes('\ufffd'));
});

test('deep and huge input does not crash', () => {
  const deep = '['.repeat(100000) + ']'.repeat(100000);
  assert.throws(() => ac.build(`{"chunks": [{"id": "a", "kind": "agent", "role": "user", "data": ${deep}}]}`), ac.InputError);
  let nested = [];
  for (let i = 0; i < 5000; i++) nested = [nested];
  assert.throws(() => ac.build({ chunks: [{ ...USER, data: nested }] }), ac.InputError);
  const big = { chunks: [USER, { id: 'r', kind: 'environment', text: 'a'.repeat(3000000) }] };
  assert.ok(ac.build(big, { maxTokens: 2000 }).token_count <= 2000);
});

test('the classes: hierarchy, names and exit codes', () => {
  assert.ok(ac.InputError.prototype instanceof ac.ContextError);
  assert.ok(ac.CompactionError.prototype instanceof ac.InputError);
  assert.ok(ac.BudgetExceeded.prototype instanceof ac.ContextError);
  assert.ok(ac.StoreError.prototype instanceof ac.ContextError);
  assert.ok(ac.ChatError.prototype instanceof ac.StoreError);
  assert.ok(ac.ContextError.prototype instanceof Error);
  assert.equal(new ac.ChatError('x').exitCode, 2);
  assert.equal(new ac.InputError('x').exitCode, 2);
  assert.equal(new ac.StoreError('x').exitCode, 1);
  assert.equal(new ac.ContextError('x').name, 'ContextError');
  assert.equal(new ac.CompactionError('x').name, 'CompactionError');
});

test('positional arguments of the wrong type are TypeErrors', async () => {
  assert.throws(() => ac.count(5), { name: 'TypeError', message: 'text must be a string, not number' });
  assert.throws(() => new ac.Engine(5, 'c'), { name: 'TypeError', message: 'db must be a string, not number' });
  assert.throws(() => new ac.Session({}), { name: 'TypeError', message: 'builder must be a ContextBuilder, not object' });
  const engine = new ac.Engine(path.join(tempDir(), 's.db'), 'c');
  await assert.rejects(engine.fork(5), { name: 'TypeError', message: 'name must be a string, not number' });
  await assert.rejects(engine.applyCompaction('acp1.x', Buffer.from('s')), { name: 'TypeError', message: 'summary must be a string, not object' });
});

test('store errors: ChatError for a store or chat named wrong, StoreError for a broken store', async () => {
  const dir = tempDir();
  const chunk = { id: 'u', kind: 'agent', role: 'user', text: 'a' };
  const chunkFile = tempFile('chunk.json', JSON.stringify(chunk));
  const text = path.join(dir, 'notes.txt');
  fs.writeFileSync(text, 'hello');
  for (const db of ['/dev/null', dir, '', text]) {
    for (const verb of ['append', 'build', 'export']) {
      const expected = cliError(['chat', verb, '--db', db, '--chat', 'c', ...(verb === 'append' ? [chunkFile] : [])]);
      assert.equal(expected.status, 2);
      const engine = new ac.Engine(db, 'c');
      const call = { append: () => engine.append(chunk), build: () => engine.build(), export: () => engine.export() }[verb];
      await rejectsLikeCli(call(), ac.ChatError, expected);
      if (verb === 'append') throwsLikeCli(() => engine.appendSync(chunk), ac.ChatError, expected);
      if (verb === 'build') throwsLikeCli(() => engine.buildSync(), ac.ChatError, expected);
    }
  }
  // A missing store or chat is named wrong too; nothing is created.
  const missing = path.join(dir, 'none.db');
  await rejectsLikeCli(new ac.Engine(missing, 'x').build(), ac.ChatError, cliError(['chat', 'build', '--db', missing, '--chat', 'x']));
  assert.ok(!fs.existsSync(missing));
  const db = path.join(dir, 's.db');
  const engine = new ac.Engine(db, 'c');
  await engine.append(chunk);
  await rejectsLikeCli(engine.restore('nope'), ac.ChatError, cliError(['chat', 'restore', '--db', db, '--chat', 'c', 'nope']));
  await rejectsLikeCli(new ac.Engine(db, 'other').export(), ac.ChatError, cliError(['chat', 'export', '--db', db, '--chat', 'other']));
  // A duplicate chunk is the caller's input to fix.
  const duplicate = cliError(['chat', 'append', '--db', db, '--chat', 'c', chunkFile]);
  await rejectsLikeCli(engine.append(chunk), ac.InputError, duplicate);
  assert.throws(() => new ac.Engine(db, ''), { name: 'InputError', message: 'chat: a chat id cannot be empty; give the chat a name' });
  // A file that is a SQLite database but no store of ours fails as a store.
  const other = path.join(dir, 'other.db');
  fs.writeFileSync(other, Buffer.concat([Buffer.from('SQLite format 3\0'), Buffer.alloc(4080, 1)]));
  const broken = cliError(['chat', 'append', '--db', other, '--chat', 'c', chunkFile]);
  const error = await rejectsLikeCli(new ac.Engine(other, 'c').append(chunk), broken.status === 2 ? ac.ChatError : ac.StoreError, broken);
  assert.ok(error instanceof ac.StoreError);
});

test('a refused compaction is a CompactionError with the CLI message', async () => {
  const dir = tempDir();
  const db = path.join(dir, 'loop.db');
  const engine = new ac.Engine(db, 'loop');
  await engine.append(loopChunks(12, 0, 100));
  const settings = { maxTokens: 8000, reserve: 500 };
  const plan = await engine.planCompaction({ ...settings, keepTokens: 1500 });
  assert.ok(plan.plan.startsWith('acp1.'));
  await engine.applyCompaction(plan, 'Read m0 to m8; all well.', settings);
  const summary = tempFile('summary.txt', 'Read m0 to m8; all well.');
  const expected = cliError(['chat', 'compact', '--db', db, '--chat', 'loop', '--max-tokens', '8000', '--reserve', '500', '--apply', plan.plan, '--summary', summary]);
  assert.equal(expected.status, 2);
  const error = await rejectsLikeCli(engine.applyCompaction(plan.plan, 'Read m0 to m8; all well.', settings), ac.CompactionError, expected);
  assert.ok(error instanceof ac.InputError && !(error instanceof ac.StoreError));
  await assert.rejects(engine.applyCompaction({ plan: null, reason: 'keepTokens keeps all' }, 's'), {
    name: 'InputError',
    message: 'the plan holds no plan to apply: there was nothing to fold (keepTokens keeps all)',
  });
});

test('errors of async calls reject with the same classes', async () => {
  const session = { system_prompt: 'You are careful. '.repeat(200), chunks: [USER] };
  await assert.rejects(ac.buildAsync(session, { maxTokens: 300 }), (e) => e instanceof ac.BudgetExceeded && e.available === 300);
  await assert.rejects(ac.buildAsync('{', {}), (e) => e instanceof ac.InputError && e.exitCode === 2);
  await assert.rejects(ac.buildAsync(session, { maxToken: 1 }), ac.InputError);
  await assert.rejects(new ac.ContextBuilder({ maxTokens: 300 }).buildAsync(session), ac.BudgetExceeded);
});
