// build() equals `agent-context build` for every output and many flag sets,
// its warnings are the CLI's, and count() is `agent-context count`.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

import * as ac from '../index.mjs';
import { DATA, cli, cliJson, cliOutput, cliWarnings, collecting, quiet, tempFile } from './helpers.mjs';

const EDITS = {
  edits: [
    { type: 'clear_thinking_20251015' },
    {
      type: 'clear_tool_uses_20250919',
      trigger: { type: 'tool_uses', value: 6 },
      keep: { type: 'tool_uses', value: 3 },
    },
  ],
};

// [options, the same as flags]
const SETTINGS = [
  [{ maxTokens: 4000, reserve: 500 }, ['--max-tokens', '4000', '--reserve', '500']],
  [{}, []],
  [
    { maxTokens: 6000, caps: { tool_result: 300, 'tool:bash': null }, lowWater: 1.0 },
    ['--max-tokens', '6000', '--cap', 'tool_result=300', '--cap', 'tool:bash=none', '--low-water', '1.0'],
  ],
  [{ maxTokens: 20000, contextManagement: EDITS }, ['--max-tokens', '20000', '--context-management', JSON.stringify(EDITS)]],
  [
    {
      maxTokens: 5000,
      escape: 'xml',
      framing: 'none',
      excludeKinds: ['thinking'],
      fragmentsFormat: 'toon',
      contentFormat: 'xml',
    },
    [
      '--max-tokens', '5000', '--escape', 'xml', '--framing', 'none', '--exclude-kind', 'thinking',
      '--fragments-format', 'toon', '--content-format', 'xml',
    ],
  ],
  [
    { model: 'claude-sonnet-4-5', maxTokens: 8000, estimateFactor: 1.25, cacheControl: false },
    ['--model', 'claude-sonnet-4-5', '--max-tokens', '8000', '--estimate-factor', '1.25', '--no-cache-control'],
  ],
  [
    { maxTokens: 6000, groupFragments: true, fragmentsFormat: 'markdown' },
    ['--max-tokens', '6000', '--group-fragments', '--fragments-format', 'markdown'],
  ],
  [
    { model: 'gpt-4', maxTokens: 3000, reserve: 200, threads: 1 },
    ['--model', 'gpt-4', '--max-tokens', '3000', '--reserve', '200', '--threads', '1'],
  ],
  [
    { model: 'gpt-4.2', maxTokens: 7000, compactAt: 0.5, caps: ['tool_result=700'] },
    ['--model', 'gpt-4.2', '--max-tokens', '7000', '--compact-at', '0.5', '--cap', 'tool_result=700'],
  ],
];

describe('build equals agent-context build', () => {
  for (const file of DATA) {
    const name = path.basename(file, '.json');
    const text = fs.readFileSync(file, 'utf8');
    const session = JSON.parse(text);
    for (const output of ac.OUTPUTS) {
      test(`${name}, output ${output}: every flag set`, () => {
        for (const [options, flags] of SETTINGS) {
          const expected = cliOutput(['build', file, ...flags], output);
          const seen = collecting();
          assert.deepEqual(ac.build(session, { ...options, output, ...seen.options }), expected.body, flags.join(' '));
          assert.deepEqual(seen.warnings, cliWarnings(expected.stderr), `warnings of ${flags.join(' ')}`);
          // The JSON text is read as the CLI reads the file.
          assert.deepEqual(ac.build(text, { ...options, output, ...quiet }), expected.body);
        }
      });
    }
  }
});

test('the output of each name has its type', () => {
  const session = JSON.parse(fs.readFileSync(DATA[0], 'utf8'));
  assert.equal(typeof ac.build(session, { output: 'text' }), 'string');
  const report = ac.build(session, { maxTokens: 4000 });
  assert.ok(report.token_count <= 4000 && report.token_count_exact === true);
  assert.deepEqual(
    [...ac.OUTPUTS],
    cli(['build', '--output', 'nope', DATA[0]], { check: false }).stderr.match(/\[possible values: ([^\]]+)\]/)[1].split(', '),
  );
  assert.ok(Object.isFrozen(ac.OUTPUTS));
});

test('warnings go to onWarning, else to process.emitWarning as ContextWarning', async () => {
  const session = JSON.parse(fs.readFileSync(DATA[0], 'utf8'));
  const seen = collecting();
  ac.build(session, { model: 'gpt-4.2', maxTokens: 8000, ...seen.options });
  assert.equal(seen.warnings.length, 1);
  assert.match(seen.warnings[0], /not in the model table/);
  const emitted = [];
  const listener = (warning) => emitted.push(warning);
  process.on('warning', listener);
  try {
    ac.build(session, { model: 'gpt-4.2', maxTokens: 8000 });
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', listener);
  }
  assert.equal(emitted.length, 1);
  assert.equal(emitted[0].name, 'ContextWarning');
  assert.equal(emitted[0].message, seen.warnings[0]);
  // No warning, no call.
  const none = collecting();
  ac.build(session, { maxTokens: 8000, ...none.options });
  assert.deepEqual(none.warnings, []);
});

test('explain delivers the CLI breakdown to onExplain, with the build warnings in it', () => {
  const file = DATA[0];
  const session = JSON.parse(fs.readFileSync(file, 'utf8'));
  const cases = [
    [{ maxTokens: 4000 }, ['--max-tokens', '4000']],
    [
      { model: 'gpt-4.2', maxTokens: 4000, estimateFactor: 2 },
      ['--model', 'gpt-4.2', '--max-tokens', '4000', '--estimate-factor', '2'],
    ],
  ];
  for (const [options, flags] of cases) {
    const done = cli(['build', file, ...flags, '--explain', '--output', 'openai']);
    const breakdown = done.stderr
      .split(/(?<=\n)/)
      .filter((line) => !line.startsWith('warning: '))
      .join('');
    const explained = [];
    const seen = collecting();
    const body = ac.build(session, { ...options, explain: true, output: 'openai', onExplain: (text) => explained.push(text), ...seen.options });
    assert.deepEqual(body, JSON.parse(done.stdout));
    assert.ok(breakdown.length > 0);
    assert.deepEqual(explained, [breakdown]);
    assert.deepEqual(seen.warnings, cliWarnings(done.stderr));
  }
  // Without explain, no breakdown.
  const explained = [];
  ac.build(session, { maxTokens: 4000, onExplain: (text) => explained.push(text) });
  assert.deepEqual(explained, []);
});

test('every flag has its option, and null is the default', () => {
  const session = JSON.parse(fs.readFileSync(DATA[0], 'utf8'));
  const base = ac.build(session, {
    maxTokens: 6000,
    caps: { tool_result: 300 },
    excludeKinds: ['thinking'],
    cacheControl: false,
    output: 'anthropic-native',
  });
  const flags = cliJson(['build', DATA[0], '--max-tokens', '6000', '--cap', 'tool_result=300', '--exclude-kind', 'thinking', '--no-cache-control', '--output', 'anthropic-native']);
  assert.deepEqual(base, flags);
  assert.deepEqual(
    ac.build(session, { maxTokens: 6000, cap: ['tool_result=300'], excludeKind: 'thinking', noCacheControl: true, output: 'anthropic_native' }),
    base,
  );
  assert.deepEqual(
    ac.build(session, {
      maxTokens: 6000, caps: { tool_result: 300 }, excludeKinds: 'thinking', cacheControl: false, output: 'anthropic-native',
      model: null, escape: null, lowWater: null, threads: null, estimateFactor: null, maxInputBytes: null, reserve: undefined,
    }),
    base,
  );
  assert.notDeepEqual(ac.build(session, { maxTokens: 6000, output: 'anthropic-native' }), base);
  assert.throws(() => ac.build(session, { maxInputBytes: 100 }), (error) => error instanceof ac.InputError && /larger than the limit of 100 bytes/.test(error.message));
  const cm = tempFile('cm.json', '{"edits": [{"type": "clear_thinking_20251015"}]}');
  const byObject = ac.build(session, { contextManagement: { edits: [{ type: 'clear_thinking_20251015' }] } });
  assert.deepEqual(ac.build(session, { contextManagement: cm }), byObject);
  assert.deepEqual(ac.build(session, { contextManagement: '{"edits": [{"type": "clear_thinking_20251015"}]}' }), byObject);
  assert.deepEqual(byObject, cliJson(['build', DATA[0], '--context-management', cm]));
});

test('compactAt: an integer is tokens, a fraction or its text a fraction of the budget', () => {
  const file = DATA[0];
  const session = JSON.parse(fs.readFileSync(file, 'utf8'));
  for (const [value, flag] of [[0.5, '0.5'], [2000, '2000'], ['1.0', '1.0'], ['0.25', '0.25'], [1, '1']]) {
    const expected = cliJson(['build', file, '--max-tokens', '4000', '--compact-at', flag]);
    assert.deepEqual(ac.build(session, { maxTokens: 4000, compactAt: value }), expected, String(value));
  }
  assert.equal(ac.build(session, { maxTokens: 4000, compactAt: 1 }).compaction_due, true);
  assert.equal(ac.build(session, { maxTokens: 4000, compactAt: '1.0' }).compaction_due, true);
  assert.equal(ac.build(session, { maxTokens: 40000, compactAt: '1.0' }).compaction_due, false);
});

test('previous equals --previous, as an object or its JSON text', () => {
  const chunks = Array.from({ length: 3 }, (_, i) => [
    { id: `u${i}`, kind: 'agent', role: 'user', text: `Step ${i}.` },
    { id: `r${i}`, kind: 'environment', text: 'x '.repeat(3000) },
  ]).flat();
  const first = { system_prompt: 'Be careful.', chunks: chunks.slice(0, 4) };
  const second = { system_prompt: 'Be careful.', chunks };
  const firstFile = tempFile('first.json', JSON.stringify(first));
  const secondFile = tempFile('second.json', JSON.stringify(second));
  const small = ['--max-tokens', '6000', '--low-water', '0.6'];
  const savedText = cli(['build', firstFile, ...small]).stdout;
  const saved = tempFile('first-report.json', savedText);
  const firstReport = ac.build(first, { maxTokens: 6000, lowWater: 0.6 });
  assert.deepEqual(firstReport, JSON.parse(savedText));
  for (const output of ['report', 'openai', 'anthropic-native']) {
    const expected = cliJson(['build', secondFile, ...small, '--previous', saved, '--output', output]);
    assert.deepEqual(ac.build(second, { maxTokens: 6000, lowWater: 0.6, previous: firstReport, output }), expected);
    assert.deepEqual(ac.build(second, { maxTokens: 6000, lowWater: 0.6, previous: savedText, output }), expected);
    const builder = new ac.ContextBuilder({ maxTokens: 6000, lowWater: 0.6 });
    assert.deepEqual(builder.build(second, { previous: firstReport, output }), expected);
  }
  const report = ac.build(second, { maxTokens: 6000, lowWater: 0.6, previous: firstReport });
  assert.deepEqual(Object.keys(report.cache), ['stable_prefix_tokens', 'broke_at']);
  assert.equal(ac.build(second, { maxTokens: 6000, lowWater: 0.6, previous: null }).cache, undefined);
});

test('count equals agent-context count, warnings included', () => {
  const texts = [
    ...DATA.map((file) => fs.readFileSync(file, 'utf8')),
    '', 'hello world', ' '.repeat(10000), '<|endoftext|> is text', '🦀 Ünïcödé 漢字', 'x'.repeat(5000), 'def f():\n\treturn 1\n\n\n',
  ];
  for (const model of ['gpt-4o', 'gpt-4', 'claude-3-5-sonnet']) {
    for (const text of texts) {
      const file = tempFile('t.txt', text);
      const done = cli(['count', file, '--model', model]);
      const seen = collecting();
      assert.equal(ac.count(text, { model, ...seen.options }), Number(done.stdout));
      assert.deepEqual(seen.warnings, cliWarnings(done.stderr));
    }
  }
  const file = tempFile('t.txt', texts[0]);
  const done = cli(['count', file, '--model', 'gpt-4.2', '--estimate-factor', '2']);
  const seen = collecting();
  assert.equal(ac.count(texts[0], { model: 'gpt-4.2', estimateFactor: 2, ...seen.options }), Number(done.stdout));
  assert.deepEqual(seen.warnings, cliWarnings(done.stderr));
  assert.equal(ac.count('hello world'), 2);
  assert.throws(() => ac.count(Buffer.from('x')), TypeError);
  assert.throws(() => ac.count('x', { modle: 'gpt-4o' }), ac.InputError);
});
