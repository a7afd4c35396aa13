// The AI SDK's messages both ways, checked with the `ai` package itself
// (pinned in package.json): every `ai-sdk` output passes its
// `modelMessageSchema`; ModelMessage histories of its own come back as
// they went in; UIMessage histories give what its `convertToModelMessages`
// gives; the CLI's `--input ai-sdk` and `--output ai-sdk` agree.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';

import { convertToModelMessages, modelMessageSchema } from 'ai';
import { z } from 'zod';

import { ContextBuilder, InputError, Session, build, fromAiSdk, toAiSdk } from '../index.mjs';
import { DATA, cliJson, loopChunks } from './helpers.mjs';
import { mulberry32 } from './random.mjs';

const messagesSchema = z.array(modelMessageSchema);

/** Asserts `body` is `{system?, messages}` the SDK's schema accepts. */
function assertValid(body, what) {
  assert.deepEqual(
    Object.keys(body).filter((k) => k !== 'system' && k !== 'messages'),
    [],
    `${what}: only system and messages`,
  );
  if ('system' in body) assert.equal(typeof body.system, 'string', what);
  const checked = messagesSchema.safeParse(body.messages);
  assert.ok(checked.success, `${what}: ${JSON.stringify(checked.error?.issues?.slice(0, 3))}`);
  const calls = new Map();
  body.messages.forEach((message, i) => {
    for (const part of message.content) {
      if (part.type === 'tool-call') calls.set(part.toolCallId, [i, part.toolName]);
      if (part.type === 'tool-result') {
        const [at, name] = calls.get(part.toolCallId) ?? [];
        assert.equal(at, i - 1, `${what}: result ${part.toolCallId} answers the message before`);
        assert.equal(part.toolName, name, `${what}: result ${part.toolCallId} names its call's tool`);
      }
    }
  });
}

/** Seeded random values (see `random.mjs`). */
function rng(seed) {
  const next = mulberry32(seed);
  const int = (n) => Math.floor(next() * n);
  const pick = (xs) => xs[int(xs.length)];
  const ALPHABET = 'abcdefghij KLMNO 0123 <>&"\'{}[]\n\t-é漢🙂';
  const text = () => {
    const chars = Array.from({ length: 1 + int(30) }, () => pick([...ALPHABET]));
    return `${chars.join('')}x`;
  };
  const value = (depth = 0) => {
    const kind = int(depth > 1 ? 4 : 6);
    if (kind === 0) return text();
    if (kind === 1) return int(1000) - 500;
    if (kind === 2) return next() < 0.5;
    if (kind === 3) return null;
    if (kind === 4) return Array.from({ length: int(3) }, () => value(depth + 1));
    return object(depth + 1);
  };
  const object = (depth = 0) =>
    Object.fromEntries(Array.from({ length: int(4) }, (_, i) => [`k${i}_${pick('abc')}`, value(depth)]));
  return { next, int, pick, text, object };
}

/** A ModelMessage history: user text, assistant turns of signed
 * reasoning, text and calls, each call answered in a tool message. */
function modelHistory(r) {
  const messages = [];
  let calls = 0;
  for (let turn = 0, n = 1 + r.int(6); turn < n; turn++) {
    messages.push({ role: 'user', content: [{ type: 'text', text: r.text() }] });
    const parts = [];
    if (r.next() < 0.4) {
      const signature = `sig${r.int(1e6)}`;
      parts.push({ type: 'reasoning', text: r.text(), providerOptions: { anthropic: { signature } } });
    }
    if (r.next() < 0.7) parts.push({ type: 'text', text: r.text() });
    const results = [];
    for (let c = 0, k = r.int(3); c < k; c++) {
      const id = `call_${++calls}`;
      const toolName = r.pick(['bash', 'read_file', 'search']);
      parts.push({ type: 'tool-call', toolCallId: id, toolName, input: r.object() });
      const output = r.pick([
        () => ({ type: 'text', value: r.text() }),
        () => ({ type: 'json', value: r.object() }),
        () => ({ type: 'error-text', value: r.text() }),
        () => ({ type: 'error-json', value: [r.object()] }),
      ])();
      results.push({ type: 'tool-result', toolCallId: id, toolName, output });
    }
    if (parts.length === 0) parts.push({ type: 'text', text: r.text() });
    messages.push({ role: 'assistant', content: parts });
    if (results.length > 0) messages.push({ role: 'tool', content: results });
  }
  return r.next() < 0.5 ? { system: r.text(), messages } : { messages };
}

/** A UIMessage history as `useChat` keeps it: steps of signed reasoning,
 * text and tool parts in every state that has an input. */
function uiHistory(r) {
  const messages = [];
  if (r.next() < 0.5) messages.push({ id: 'sys', role: 'system', parts: [{ type: 'text', text: r.text() }] });
  let calls = 0;
  for (let turn = 0, n = 1 + r.int(4); turn < n; turn++) {
    messages.push({ id: `u${turn}`, role: 'user', parts: [{ type: 'text', text: r.text() }] });
    const parts = [];
    for (let step = 0, s = 1 + r.int(3); step < s; step++) {
      parts.push({ type: 'step-start' });
      if (r.next() < 0.3) {
        parts.push({ type: 'reasoning', text: r.text(), providerMetadata: { anthropic: { signature: `s${r.int(1e6)}` } } });
      }
      // The model's last step says something; every other ends in calls.
      if (r.next() < 0.6 || step === s - 1) parts.push({ type: 'text', text: r.text() });
      for (let c = 0, k = step < s - 1 ? 1 + r.int(2) : r.int(3); c < k; c++) {
        const toolCallId = `c${++calls}`;
        const name = r.pick(['weather', 'clock']);
        const input = r.object();
        const part = r.pick([
          () => ({ state: 'output-available', output: r.object() }),
          () => ({ state: 'output-available', output: r.text() }),
          () => ({ state: 'output-error', errorText: r.text() }),
        ])();
        const dynamic = r.next() < 0.3;
        parts.push(
          dynamic
            ? { type: 'dynamic-tool', toolName: name, toolCallId, input, ...part }
            : { type: `tool-${name}`, toolCallId, input, ...part },
        );
      }
    }
    messages.push({ id: `a${turn}`, role: 'assistant', parts });
  }
  return messages;
}

test('every ai-sdk output of the bundled sessions passes the SDK schema', () => {
  for (const file of DATA) {
    const session = fs.readFileSync(file, 'utf8');
    for (const maxTokens of [2000, 4000, 16000, 200000]) {
      const body = toAiSdk(session, { maxTokens, onWarning: () => {} });
      assertValid(body, `${path.basename(file)} at ${maxTokens}`);
      assert.deepEqual(body, cliJson(['build', file, '--output', 'ai-sdk', '--max-tokens', maxTokens]));
    }
  }
});

test('a ModelMessage history of the SDK comes back as it went in', () => {
  const r = rng(42);
  for (let i = 0; i < 200; i++) {
    const history = modelHistory(r);
    const warnings = [];
    const back = toAiSdk(history, { input: 'ai-sdk', maxTokens: 100_000, onWarning: (w) => warnings.push(w) });
    assert.deepEqual(back, history, `history ${i}`);
    // Only the request's own note: the history ends with the assistant.
    assert.deepEqual(warnings.filter((w) => !w.startsWith('the history ends with an assistant')), []);
    const session = fromAiSdk(history);
    assert.deepEqual(toAiSdk(session, { maxTokens: 100_000, onWarning: () => {} }), history, `history ${i} by fromAiSdk`);
    assertValid(back, `history ${i}`);
  }
});

test('a UIMessage history gives what convertToModelMessages gives', async () => {
  const r = rng(7);
  for (let i = 0; i < 150; i++) {
    const history = uiHistory(r);
    // As JSON: the SDK leaves keys such as `providerExecuted: undefined`.
    const theirs = JSON.parse(JSON.stringify(await convertToModelMessages(history)));
    const ours = toAiSdk(history, { input: 'ai-sdk', maxTokens: 100_000, onWarning: () => {} });
    const asMessages = ours.system === undefined ? ours.messages : [{ role: 'system', content: ours.system }, ...ours.messages];
    assert.deepEqual(asMessages, theirs, `history ${i}: ${JSON.stringify(history)}`);
    assertValid(ours, `UI history ${i}`);
  }
});

test('within a small budget the messages still pair every call and pass the schema', () => {
  const r = rng(3);
  for (let i = 0; i < 60; i++) {
    const history = modelHistory(r);
    const full = build(history, { input: 'ai-sdk', maxTokens: 100_000, onWarning: () => {} });
    for (const share of [0.3, 0.6]) {
      const maxTokens = Math.max(200, Math.floor(full.token_count * share));
      let body;
      try {
        body = toAiSdk(history, { input: 'ai-sdk', maxTokens, onWarning: () => {} });
      } catch (error) {
        // The newest step may be more than the budget: a BudgetExceeded.
        assert.equal(error.name, 'BudgetExceeded', String(error));
        continue;
      }
      assertValid(body, `history ${i} at ${maxTokens}`);
    }
  }
});

test('fromAiSdk gives the session --input ai-sdk reads, with its warning', () => {
  const history = [
    { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'Look.' }, { type: 'file', mediaType: 'image/png', url: 'data:,' }] },
    { id: 'a1', role: 'assistant', parts: [{ type: 'text', text: 'Seen.' }] },
  ];
  const warnings = [];
  const session = fromAiSdk(history, { onWarning: (w) => warnings.push(w) });
  assert.deepEqual(session, {
    chunks: [
      { id: 'u1.0', kind: 'agent', role: 'user', text: 'Look.' },
      { id: 'a1.0', kind: 'agent', role: 'assistant', text: 'Seen.' },
    ],
  });
  assert.deepEqual(warnings, ['parts of the AI SDK messages that no chunk holds were left out: 1 file']);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ai-sdk-'));
  const file = path.join(dir, 'history.json');
  fs.writeFileSync(file, JSON.stringify(history));
  try {
    const report = cliJson(['build', file, '--input', 'ai-sdk']);
    assert.deepEqual(build(session), report);
    assert.deepEqual(build(history, { input: 'ai-sdk', onWarning: () => {} }), report);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('messages the SDK would refuse are an InputError naming where', () => {
  assert.throws(
    () => fromAiSdk([{ role: 'assistant', content: [{ type: 'tool-call', toolName: 'x' }] }]),
    (error) => error instanceof InputError && error.message.includes('messages[0].content[0].toolCallId'),
  );
  assert.throws(() => build([], { input: 'yaml' }), (error) => error instanceof InputError && /unknown input "yaml"/.test(error.message));
  assert.throws(() => fromAiSdk([], { maxTokens: 5 }), (error) => error instanceof InputError && /unknown option "maxTokens"/.test(error.message));
});

test('an ai-sdk output read back and built within the same budget is the same output', () => {
  const sessions = DATA.map((file) => fs.readFileSync(file, 'utf8'));
  sessions.push({ system_prompt: 'You read code.', chunks: loopChunks(30, 0, 20) });
  for (const session of sessions) {
    for (const maxTokens of [2000, 4000, 16000, 100000]) {
      let once;
      try {
        once = toAiSdk(session, { maxTokens, onWarning: () => {} });
      } catch (error) {
        assert.equal(error.name, 'BudgetExceeded', String(error));
        continue;
      }
      const again = toAiSdk(fromAiSdk(once), { maxTokens, onWarning: () => {} });
      assert.equal(JSON.stringify(again), JSON.stringify(once), `at ${maxTokens}`);
    }
  }
});

test('string content reads as one text part', () => {
  const history = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Hi' },
    { role: 'assistant', content: 'Hello.' },
  ];
  assert.deepEqual(toAiSdk(history, { input: 'ai-sdk', onWarning: () => {} }), {
    system: 'Be brief.',
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Hello.' }] },
    ],
  });
});

test('a history appended turn by turn from its place builds as the whole history', () => {
  const r = rng(11);
  const { messages } = modelHistory(r);
  const cut = Math.ceil(messages.length / 2);
  const session = new Session(new ContextBuilder({ maxTokens: 100_000, output: 'ai-sdk', onWarning: () => {} }));
  session.extend(fromAiSdk(messages.slice(0, cut)).chunks);
  session.extend(fromAiSdk(messages.slice(cut), { start: cut }).chunks);
  assert.deepEqual(session.state(), fromAiSdk(messages));
  assert.deepEqual(session.build(), toAiSdk(messages, { input: 'ai-sdk', maxTokens: 100_000, onWarning: () => {} }));
  assert.throws(() => fromAiSdk(messages, { start: -1 }), (error) => error instanceof InputError && /start/.test(error.message));
});
