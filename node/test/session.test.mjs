// Session: one build per turn, within the budget, each build equal to a
// one-shot build of the same state given the previous report; and the
// ContextBuilder it is made of.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';

import * as ac from '../index.mjs';
import { DATA, loopChunks, quiet, turn } from './helpers.mjs';

test('a 200-turn loop stays within budget, keeps pairs, and each build is a one-shot build given the previous report', () => {
  const settings = { maxTokens: 8000, reserve: 500, lowWater: 0.7 };
  const session = new ac.Session(new ac.ContextBuilder(settings), { system_prompt: 'You read code.' });
  let previous;
  let trims = 0;
  let extended = 0;
  for (let i = 0; i < 200; i++) {
    const chunks = turn(i, 12);
    session.extend(chunks.slice(0, 3));
    session.push(chunks[3]);
    const report = session.build();
    assert.ok(report.token_count <= 7500, `turn ${i}: ${report.token_count}`);
    const included = new Set(report.included);
    assert.ok(included.has(`u${i}`) && included.has(`r${i}`), `turn ${i}: the latest user turn and tool use`);
    for (let j = 0; j <= i; j++) assert.equal(included.has(`c${j}`), included.has(`r${j}`), `turn ${i}: pair ${j}`);
    const expected = ac.build(session.state(), { ...settings, previous });
    if (i > 0) {
      // A report read back does not keep which tokens of a message stay
      // when it grows: the one-shot build counts them lost (a lower bound,
      // docs/cli.md), the session stable. The previous prompt's tokens are
      // split alike.
      assert.deepEqual(Object.keys(report.cache), ['stable_prefix_tokens', 'broke_at']);
      const [got, one] = [report.cache, expected.cache];
      assert.ok(got.stable_prefix_tokens >= one.stable_prefix_tokens, `turn ${i}`);
      const held = (cache) => cache.stable_prefix_tokens + (cache.broke_at ? cache.broke_at.tokens_lost : 0);
      if (got.broke_at && one.broke_at) assert.equal(held(got), held(one), `turn ${i}`);
      for (const report_ of [report, expected]) {
        delete report_.stable_prefix_tokens;
        report_.cache = { ...report_.cache, stable_prefix_tokens: 0 };
        if (report_.cache.broke_at) report_.cache.broke_at = { ...report_.cache.broke_at, tokens_lost: 0 };
      }
    }
    assert.deepEqual(report, expected, `turn ${i}`);
    trims += report.decisions.some((d) => d.decision === 'dropped' || d.decision === 'stubbed') ? 1 : 0;
    extended += session.stats().extended ? 1 : 0;
    previous = report;
  }
  assert.equal(session.length, 800);
  assert.ok(trims > 150, `${trims} turns trimmed`);
  assert.ok(extended > 100, `${extended} turns extended the build before`);
  assert.ok(session.stats().chunksRendered <= 8);
});

test('turn after turn, a session shares its unchanged rows, and its outputs are the one-shot ones, key order included', () => {
  const settings = { maxTokens: 6000, reserve: 500 };
  const builder = new ac.ContextBuilder(settings);
  const [byReport, byOpenai, mixed, byAiSdk, written] = [0, 1, 2, 3, 4].map(
    () => new ac.Session(builder, { system_prompt: 'You read code.' }),
  );
  let previous;
  let last = {};
  let shared = 0;
  let kept = 0;
  for (let i = 0; i < 120; i++) {
    for (const session of [byReport, byOpenai, mixed, byAiSdk, written]) session.extend(turn(i, 12));
    // ai-sdk turn after turn, against one whose rows start afresh each turn
    // (another output of the same builder in between).
    const sdk = byAiSdk.build({ output: 'ai-sdk', ...quiet });
    written.build({ output: 'openai-native', ...quiet });
    assert.equal(JSON.stringify(sdk), JSON.stringify(written.build({ output: 'ai-sdk', ...quiet })), `turn ${i}: ai-sdk`);
    const report = byReport.build();
    const messages = byOpenai.build({ output: 'openai' });
    // Every tenth turn the mixed session switches output, and its rows start afresh.
    const output = Math.floor(i / 10) % 2 === 0 ? 'report' : 'openai';
    const either = mixed.build({ output });
    const expected = ac.build(byReport.state(), { ...settings, output: 'openai', previous });
    assert.equal(JSON.stringify(messages), JSON.stringify(expected), `turn ${i}: openai`);
    assert.equal(JSON.stringify(either), JSON.stringify(output === 'report' ? report : messages), `turn ${i}: ${output}`);
    // The report's rows, and its fields in the CLI's order.
    const keys = Object.keys(ac.build(byReport.state(), { ...settings, previous }));
    assert.deepEqual(Object.keys(report), keys, `turn ${i}`);
    if (last.messages) {
      shared += messages.messages.filter((m) => last.messages.messages.includes(m)).length;
      kept += report.decisions.filter((d) => last.report.decisions.includes(d)).length;
    }
    last = { report, messages };
    previous = report;
  }
  // A short list is held inline and moves with each build; past that, an
  // appending turn shares every old row (trims share fewer).
  assert.ok(shared > 120 * 50, `${shared} messages shared with the turn before`);
  assert.ok(kept > 120 * 100, `${kept} decisions shared with the turn before`);
});

test('a session build of every output equals build before any trim', () => {
  const builder = new ac.ContextBuilder({ maxTokens: 120000, caps: { tool_result: 2000 }, cacheControl: false });
  const session = new ac.Session(builder, { system_prompt: 'You are careful.' });
  for (let i = 0; i < 4; i++) {
    session.extend(turn(i));
    for (const output of ac.OUTPUTS) {
      const got = session.build({ output, ...quiet });
      const expected = ac.build(session.state(), { maxTokens: 120000, caps: { tool_result: 2000 }, cacheControl: false, output, ...quiet });
      if (output === 'report') {
        // What the session's previous build shares with this one (build was given none).
        delete got.stable_prefix_tokens;
        delete expected.stable_prefix_tokens;
        delete got.cache;
      }
      assert.deepEqual(got, expected, `${i} ${output}`);
    }
  }
});

test('bad chunks leave the session unchanged', () => {
  const session = new ac.Session(new ac.ContextBuilder({ maxTokens: 8000 }));
  session.extend(turn(0));
  assert.throws(() => session.push({ id: 'u0', kind: 'agent', role: 'user', text: 'duplicate id' }), ac.InputError);
  assert.throws(() => session.extend([{ id: 'ok', kind: 'thinking', text: 'x' }, { id: 'bad' }]), ac.InputError);
  assert.throws(() => session.extend({ id: 'not a list' }), { name: 'InputError', message: /chunks/ });
  assert.throws(() => session.push('{'), ac.InputError);
  assert.equal(session.length, 4);
  assert.throws(() => session.build({ output: 'yaml' }), ac.InputError);
  assert.throws(() => session.push({ id: 'x', kind: 'agent', role: 'user', text: 'half \ud83e' }), /surrogate/);
  session.push({ id: 'x', kind: 'agent', role: 'user', text: 'half \ud83e' }, { lossyUnicode: true });
  assert.equal(session.length, 5);
  assert.equal(session.state().chunks[4].text, 'half \ufffd');
});

test('state, stats and length; chunks as JSON text', () => {
  const session = new ac.Session(undefined, JSON.stringify({ system_prompt: 'Hi.', chunks: turn(0) }));
  assert.equal(session.length, 4);
  session.push(JSON.stringify(turn(1)[0]));
  session.extend(JSON.stringify(turn(1).slice(1)));
  assert.equal(session.length, 8);
  const state = session.state();
  assert.equal(state.system_prompt, 'Hi.');
  assert.deepEqual(state.chunks.map((c) => c.id), ['u0', 'c0', 'r0', 'a0', 'u1', 'c1', 'r1', 'a1']);
  session.build();
  const stats = session.stats();
  assert.deepEqual(Object.keys(stats), ['chunksRendered', 'tokensCounted', 'chunksCached', 'chunksRestored', 'extended', 'replanned']);
  assert.equal(stats.chunksRendered, 8);
  session.push(turn(2)[0]);
  session.build();
  assert.equal(session.stats().chunksRendered, 1);
  assert.equal(session.stats().extended, true);
});

test('a build of another output recompiles, and the next report carries on', () => {
  const settings = { maxTokens: 12000, lowWater: 0.6 };
  const session = new ac.Session(new ac.ContextBuilder(settings));
  session.extend(loopChunks(3));
  session.build();
  const anthropic = session.build({ output: 'anthropic' });
  assert.deepEqual(anthropic, ac.build(session.state(), { ...settings, output: 'anthropic' }));
  const native = session.build({ output: 'anthropic-native' });
  assert.deepEqual(native, ac.build(session.state(), { ...settings, output: 'anthropic-native' }));
  session.extend(turn(3));
  const report = session.build();
  assert.ok(report.token_count <= 12000);
  const included = new Set(report.included);
  assert.ok(included.has('u3') && included.has('r3'));
  for (let j = 0; j <= 3; j++) assert.equal(included.has(`c${j}`), included.has(`r${j}`), `pair ${j}`);
  assert.ok(report.decisions.some((d) => d.decision === 'dropped' || d.decision === 'stubbed'), 'the window trims');
});

test('compaction on a session: plan, refuse, apply, build', () => {
  const settings = { maxTokens: 16000, reserve: 500, caps: { tool_result: 2000 }, compactAt: 0.9 };
  const session = new ac.Session(new ac.ContextBuilder(settings), { system_prompt: 'You read code.' });
  session.extend(loopChunks(24));
  assert.equal(session.build().compaction_due, true);
  const plan = session.planCompaction({ keepTokens: 3000, summaryTokens: 1000 });
  assert.ok(plan.plan.startsWith('acp1.') && plan.summary_tokens === 1000);
  assert.equal(session.length, 96);
  const big = 'x '.repeat(plan.folded.tokens + 10);
  assert.throws(() => session.applyCompaction(plan.plan, big), (e) => e instanceof ac.CompactionError && /not smaller/.test(e.message));
  assert.equal(session.length, 96);
  session.build({ output: 'anthropic' });
  const summary = 'Goal: read every module. Progress: read m0 to m20.';
  const applied = session.applyCompaction(plan, summary, { native: { openai: { type: 'compaction', encrypted_content: 'gAAAAB==' } } });
  assert.equal(applied.covers, plan.covers);
  assert.equal(applied.tokens_before, plan.folded.tokens);
  assert.equal(applied.chat, undefined);
  const chunk = session.state().chunks.at(-1);
  assert.deepEqual([chunk.id, chunk.kind, chunk.covers, chunk.native.openai.type], [applied.compaction, 'compaction', plan.covers, 'compaction']);
  const report = session.build();
  assert.equal(report.compaction.id, applied.compaction);
  assert.equal(report.compaction_due, false);
  assert.ok(report.messages.some((m) => m.content.includes(summary)));
  assert.throws(() => session.applyCompaction(plan, summary), (e) => e instanceof ac.CompactionError && /another compaction/.test(e.message));
  assert.throws(() => session.planCompaction({ maxTokens: 5 }), { name: 'InputError', message: /^planCompaction\(\): unknown option "maxTokens"; the options are: keepTokens/ });
  assert.equal(new ac.Session().planCompaction().plan, null);
});

test('ContextBuilder builds as build, for every output and async alike', async () => {
  const session = JSON.parse(fs.readFileSync(DATA[0], 'utf8'));
  const settings = { maxTokens: 4000, reserve: 500, caps: { tool_result: 500 } };
  const builder = new ac.ContextBuilder(settings);
  for (const output of ac.OUTPUTS) {
    const expected = ac.build(session, { ...settings, output, ...quiet });
    assert.deepEqual(builder.build(session, { output, ...quiet }), expected, output);
    assert.deepEqual(builder.withOptions({ output, ...quiet }).build(session), expected, output);
    assert.deepEqual(await builder.buildAsync(session, { output, ...quiet }), expected, output);
  }
});

test("a builder's options are every setting, and make the same builder", () => {
  const session = JSON.parse(fs.readFileSync(DATA[0], 'utf8'));
  const settings = {
    model: 'gpt-4.1', maxTokens: 4000, reserve: 500, escape: 'xml', framing: 'none', contentFormat: 'commonmark',
    fragmentsFormat: 'toon', groupFragments: true, caps: { tool_result: 500, 'id:c08': null }, lowWater: 0.5,
    contextManagement: { edits: [{ type: 'clear_thinking_20251015' }] }, compactAt: 0.75, excludeKinds: ['thinking'],
    estimateFactor: 1.7, threads: 2, output: 'openai', explain: false, cacheControl: false, maxInputBytes: 1 << 20,
    input: 'session',
  };
  const builder = new ac.ContextBuilder(settings);
  assert.deepEqual(builder.options, settings);
  const again = new ac.ContextBuilder(builder.options);
  assert.deepEqual(again.options, settings);
  assert.deepEqual(again.build(session), builder.build(session));
  assert.deepEqual(new ac.ContextBuilder().options, {
    model: 'gpt-4o', maxTokens: null, reserve: null, escape: 'structural', framing: 'openai', contentFormat: 'gfm',
    fragmentsFormat: 'xml', groupFragments: false, caps: {}, lowWater: 0.8, contextManagement: null, compactAt: null,
    excludeKinds: [], estimateFactor: null, threads: null, output: 'report', explain: false, cacheControl: true, maxInputBytes: null,
    input: 'session',
  });
  // A whole fraction comes back as its text, which reads as a fraction again.
  const whole = new ac.ContextBuilder({ compactAt: '1.0' });
  assert.equal(whole.options.compactAt, '1.0');
  assert.equal(new ac.ContextBuilder({ compactAt: 5000 }).options.compactAt, 5000);
  // withOptions changes only what it names; null sets the default back.
  const changed = builder.withOptions({ maxTokens: 5000, caps: null });
  assert.deepEqual(changed.options, { ...settings, maxTokens: 5000, caps: {} });
  assert.deepEqual(builder.options, settings, 'the builder itself is unchanged');
  // The settings are checked when the builder is made, as the CLI checks its flags.
  assert.throws(() => new ac.ContextBuilder({ lowWater: 2 }).build(session), ac.InputError);
  assert.throws(() => new ac.ContextBuilder({ caps: { nosuchtag: 5 } }), ac.InputError);
});

test("a builder's callbacks reach its builds and sessions", () => {
  const session = JSON.parse(fs.readFileSync(DATA[0], 'utf8'));
  const warnings = [];
  const explained = [];
  const builder = new ac.ContextBuilder({
    model: 'gpt-4.2', maxTokens: 8000, onWarning: (m) => warnings.push(m), onExplain: (t) => explained.push(t),
  });
  builder.build(session);
  assert.equal(warnings.length, 1);
  const s = new ac.Session(builder, session);
  s.build();
  assert.equal(warnings.length, 2);
  const own = [];
  s.build({ onWarning: (m) => own.push(m) });
  assert.equal(warnings.length, 2);
  assert.equal(own.length, 1);
  builder.withOptions({ explain: true }).build(session);
  assert.equal(explained.length, 1);
  assert.match(explained[0], /c01/);
  assert.equal(warnings.length, 2, 'with explain, the build warnings are in the breakdown');
});
