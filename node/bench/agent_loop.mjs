// A 200-turn agent loop at about 1M tokens, timed through agent-context's
// Session and through LangChain.js's trimMessages, in one process.
//
// Each turn adds a user message, a tool call, a 16 KB tool result and the
// assistant's reply; the budget is 128k tokens (gpt-4o). A turn is timed
// from the new messages to the budgeted messages:
//
// - agent-context: `session.extend(chunks)` then `session.build()` (the
//   whole report) and `session.build({output: "openai"})` and
//   `{output: "ai-sdk"}` (the messages only), on three sessions;
// - LangChain.js: `trimMessages(history, {maxTokens: 128000, strategy:
//   "last", startOn: "human", tokenCounter})`, where `tokenCounter` counts
//   each message once with js-tiktoken's o200k_base (the OpenAI cookbook's
//   framing: 3 + role + content, plus tool-call names and arguments) and
//   memoizes the count per message id.
//
// The loops run interleaved turn by turn (so the machine's load weighs on
// all alike), or one after the other with --sequential.
//
// Run (from node/, after `npm install && npm run build`):
//   node bench/agent_loop.mjs [--turns 200] [--budget 128000] [--repeat 3] [--sequential]

import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";

import { ContextBuilder, Session, count } from "../index.mjs";
import { mulberry32 } from "../test/random.mjs";
import { AIMessage, HumanMessage, ToolMessage, trimMessages } from "@langchain/core/messages";
import { Tiktoken } from "js-tiktoken/lite";
import o200k from "js-tiktoken/ranks/o200k_base";

const WORDS = (
  "the a of to in is for on with as by at from error warning ok test build " +
  "src lib main fn let mut impl struct return value result config cargo " +
  "token budget message tool call read write file path line column module " +
  "crate version compile link pass fail assert expected found index item"
).split(" ");

/** Seeded numbers (see `random.mjs`): the same loop on every run. */
function rng(seed) {
  const next = mulberry32(seed);
  return {
    random: next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    word: () => WORDS[Math.floor(next() * WORDS.length)],
  };
}

function words(r, n) {
  return Array.from({ length: n }, () => r.word()).join(" ");
}

/** A log-like text of `size` bytes. */
function toolResult(r, size = 16 * 1024) {
  const lines = [];
  let total = 0;
  while (total < size) {
    const line = `[${String(r.int(0, 99999)).padStart(5, "0")}] ${words(r, r.int(6, 14))} ${r.random().toFixed(6)}`;
    lines.push(line);
    total += line.length + 1;
  }
  return lines.join("\n").slice(0, size);
}

/** The loop's turns: {user, args, result, reply}. */
function turns(n, seed = 7) {
  const r = rng(seed);
  return Array.from({ length: n }, (_, i) => ({
    user: `Step ${i}: ${words(r, 60)}`,
    args: { path: `src/module_${i}.rs`, lines: [1, r.int(100, 900)] },
    result: toolResult(r),
    reply: words(r, 80),
  }));
}

function chunksOf(i, turn) {
  const call = `call_${i}`;
  return [
    { id: `u${i}`, kind: "agent", role: "user", text: turn.user },
    { id: `c${i}`, kind: "workflow", action: "tool_call", tool: "read_file", call_id: call, data: turn.args },
    { id: `r${i}`, kind: "environment", tool: "read_file", call_id: call, success: true, text: turn.result },
    { id: `a${i}`, kind: "agent", role: "assistant", text: turn.reply },
  ];
}

function langchainMessages(i, turn) {
  const call = `call_${i}`;
  return [
    new HumanMessage({ content: turn.user, id: `u${i}` }),
    new AIMessage({ content: "", id: `c${i}`, tool_calls: [{ id: call, name: "read_file", args: turn.args }] }),
    new ToolMessage({ content: turn.result, tool_call_id: call, id: `r${i}` }),
    new AIMessage({ content: turn.reply, id: `a${i}` }),
  ];
}

/** trimMessages' tokenCounter: the cookbook's framing, one js-tiktoken
 * count per message, memoized by message id. (trimMessages copies every
 * message before counting, so a memo keyed by the object itself would
 * never hit; the copy keeps the id and the very same content string.) */
function cachedCounter(encoding) {
  const cache = new Map();
  const countOne = (message) => {
    const hit = cache.get(message.id);
    if (hit !== undefined && hit.content === message.content) return hit.tokens;
    const content = typeof message.content === "string" ? message.content : JSON.stringify(message.content);
    let tokens = 3 + encoding.encode(message._getType()).length + encoding.encode(content).length;
    for (const call of message.tool_calls ?? []) {
      tokens += encoding.encode(call.name).length + encoding.encode(JSON.stringify(call.args)).length;
    }
    cache.set(message.id, { content: message.content, tokens });
    return tokens;
  };
  return (messages) => 3 + messages.reduce((sum, m) => sum + countOne(m), 0);
}

/** The loops, as async generators: each step runs and times one turn. */
function loops(data, budget, counter) {
  // ai-sdk notes each turn that the history ends with the assistant.
  const builder = new ContextBuilder({ model: "gpt-4o", maxTokens: budget, onWarning: () => {} });
  async function* sessionLoop(output) {
    const session = new Session(builder);
    for (const [i, turn] of data.entries()) {
      const chunks = chunksOf(i, turn);
      const start = performance.now();
      session.extend(chunks);
      const result = output ? session.build({ output }) : session.build();
      const elapsed = performance.now() - start;
      if (!output && result.token_count > budget) throw new Error("over budget");
      yield [elapsed, result];
    }
  }
  async function* langchainLoop() {
    const history = [];
    for (const [i, turn] of data.entries()) {
      const fresh = langchainMessages(i, turn);
      const start = performance.now();
      history.push(...fresh);
      const kept = await trimMessages(history, {
        maxTokens: budget,
        strategy: "last",
        startOn: "human",
        tokenCounter: counter,
      });
      yield [performance.now() - start, kept];
    }
  }
  return {
    report: sessionLoop(undefined),
    openai: sessionLoop("openai"),
    "ai-sdk": sessionLoop("ai-sdk"),
    langchain: langchainLoop(),
  };
}

/** Times every turn of the loops, interleaved or one after the other. */
async function run(data, budget, counter, sequential) {
  const steps = loops(data, budget, counter);
  const times = Object.fromEntries(Object.keys(steps).map((name) => [name, []]));
  const last = {};
  const step = async (name) => {
    const { value } = await steps[name].next();
    times[name].push(value[0]);
    last[name] = value[1];
  };
  if (sequential) {
    for (const name of Object.keys(steps)) for (let i = 0; i < data.length; i++) await step(name);
  } else {
    for (let i = 0; i < data.length; i++) for (const name of Object.keys(steps)) await step(name);
  }
  return { times, last };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)];
const ms = (x) => `${x.toFixed(3).padStart(8)} ms`;

async function main() {
  const { values } = parseArgs({
    options: {
      turns: { type: "string", default: "200" },
      budget: { type: "string", default: "128000" },
      repeat: { type: "string", default: "3" },
      sequential: { type: "boolean", default: false },
    },
  });
  const [n, budget, repeat] = [Number(values.turns), Number(values.budget), Number(values.repeat)];
  const data = turns(n);
  const encoding = new Tiktoken(o200k);
  const total = data.reduce((sum, t, i) => sum + count(JSON.stringify(chunksOf(i, t))), 0);
  console.log(`${n} turns, about ${total.toLocaleString("en")} tokens of session JSON, budget ${budget.toLocaleString("en")}`);

  // Warm both: the tokenizer tables, LangChain's modules, the JIT.
  count("warm up");
  encoding.encode("warm up");
  await run(data.slice(0, 2), budget, cachedCounter(encoding), false);

  const medians = { report: [], openai: [], "ai-sdk": [], langchain: [] };
  let times;
  let last;
  let counter;
  for (let r = 0; r < repeat; r++) {
    counter = cachedCounter(encoding);
    ({ times, last } = await run(data, budget, counter, values.sequential));
    for (const [name, series] of Object.entries(times)) medians[name].push(median(series.slice(1)));
  }
  const lc = median(medians.langchain);
  const mode = values.sequential ? "one loop after the other" : "loops interleaved turn by turn";
  console.log(`warm turn, median of ${repeat} runs' medians over turns 2-${n}, ${mode}`);
  console.log(`${"".padEnd(50)} ${"median".padStart(11)} ${"p90".padStart(11)}  ${"tokens kept".padStart(11)}  vs LangChain`);
  const rows = [
    ["agent-context Session.build() (report)", "report", last.report.token_count],
    ["agent-context Session.build({output: 'openai'})", "openai", last.report.token_count],
    ["agent-context Session.build({output: 'ai-sdk'})", "ai-sdk", last.report.token_count],
    ["LangChain.js trimMessages, cached js-tiktoken", "langchain", counter(last.langchain)],
  ];
  for (const [label, key, tokens] of rows) {
    const m = median(medians[key]);
    console.log(
      `${label.padEnd(50)} ${ms(m)} ${ms(p90(times[key].slice(1)))}  ${tokens.toLocaleString("en").padStart(11)}  ${(m / lc).toFixed(2).padStart(6)}x`,
    );
  }
  console.log(
    `messages out: agent-context ${last.openai.messages.length} (old tool results as stubs), LangChain.js ${last.langchain.length}`,
  );
}

await main();
