// buildAsync equals build, and runs off the event loop: timers fire while
// a large build runs on the libuv pool.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';

import * as ac from '../index.mjs';
import { DATA, loopChunks, quiet } from './helpers.mjs';

test('buildAsync equals build for every output', async () => {
  for (const file of DATA) {
    const session = JSON.parse(fs.readFileSync(file, 'utf8'));
    for (const output of ac.OUTPUTS) {
      const options = { maxTokens: 5000, reserve: 300, output, ...quiet };
      assert.deepEqual(await ac.buildAsync(session, options), ac.build(session, options), `${file} ${output}`);
    }
  }
});

/** Runs `work` with a 1 ms interval timer going: how many times it fired,
 * and the longest the event loop went without it. */
async function withTimer(work) {
  const ticks = [performance.now()];
  const timer = setInterval(() => ticks.push(performance.now()), 1);
  try {
    const value = await work();
    ticks.push(performance.now());
    const gaps = ticks.slice(1).map((t, i) => t - ticks[i]);
    return { value, fired: ticks.length - 2, longest: Math.max(...gaps) };
  } finally {
    clearInterval(timer);
  }
}

test('a large buildAsync leaves the event loop free', async () => {
  const options = { maxTokens: 128000, reserve: 4000, output: 'openai' };
  // A session large enough that a build in place blocks the loop for a
  // while, however fast the addon was compiled.
  let text;
  let sync;
  for (let turns = 200; !sync || (sync.longest <= 40 && turns <= 3200); turns *= 2) {
    text = JSON.stringify({ system_prompt: 'You read code.', chunks: loopChunks(turns) });
    ac.build(text, options); // loads the tokenizer tables
    sync = await withTimer(async () => ac.build(text, options));
  }
  // The same build in place blocks the loop for its whole length: the
  // measure below can tell the two apart.
  assert.equal(sync.fired, 0);
  assert.ok(sync.longest > 40, `a build long enough to see (${sync.longest} ms)`);
  const async_ = await withTimer(() => ac.buildAsync(text, options));
  assert.deepEqual(async_.value, sync.value);
  assert.ok(async_.fired > 3, `the timer fired ${async_.fired} times`);
  assert.ok(async_.longest < sync.longest / 2, `the loop waited at most ${async_.longest} ms (in place: ${sync.longest} ms)`);
  // A builder's, too.
  const builder = new ac.ContextBuilder(options);
  const built = await withTimer(() => builder.buildAsync(text));
  assert.deepEqual(built.value, sync.value);
  assert.ok(built.fired > 3 && built.longest < sync.longest / 2);
});

test('many buildAsync calls run at once and each gets its own result', async () => {
  const sessions = Array.from({ length: 6 }, (_, n) => ({ chunks: loopChunks(4 + n, 0, 50) }));
  const results = await Promise.all(sessions.map((session) => ac.buildAsync(session, { maxTokens: 6000, output: 'openai' })));
  results.forEach((result, n) => assert.deepEqual(result, ac.build(sessions[n], { maxTokens: 6000, output: 'openai' })));
  assert.notDeepEqual(results[0], results[5]);
});

test('buildAsync delivers warnings and the explain breakdown as build does', async () => {
  const session = JSON.parse(fs.readFileSync(DATA[0], 'utf8'));
  const seen = { sync: [], async: [] };
  const explained = { sync: [], async: [] };
  const options = (key) => ({
    model: 'gpt-4o', maxTokens: 4000, estimateFactor: 2, explain: true,
    onWarning: (m) => seen[key].push(m), onExplain: (t) => explained[key].push(t),
  });
  assert.deepEqual(await ac.buildAsync(session, options('async')), ac.build(session, options('sync')));
  assert.deepEqual(seen.async, seen.sync);
  assert.equal(seen.sync.length, 1);
  assert.deepEqual(explained.async, explained.sync);
  assert.equal(explained.sync.length, 1);
});
