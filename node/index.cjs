'use strict';
// agent-context for Node.js: an LLM agent's typed memory in, the prompt
// within a token budget out, with exact tokenizer counts. Every call is a
// command of the `agent-context` CLI, through the same library layer the
// CLI runs (`agent_context::command`): the options are its flags in
// camelCase (`--max-tokens` is `maxTokens`), the result is what it prints.
//
// JSON crosses into the addon as text: sessions, chunks and options are
// written with JSON.stringify (a string is taken as JSON text as it is),
// and a JSON result is parsed once with JSON.parse.

const native = require('./native.cjs');

// ---------------------------------------------------------------- errors

/** The base of every error agent-context throws. */
class ContextError extends Error {
  constructor(message, exitCode = 1) {
    super(message);
    this.name = new.target.name;
    /** The exit status of the CLI for the same error. */
    this.exitCode = exitCode;
  }
}

/** Input or options the caller must fix (the CLI's exit status 2). */
class InputError extends ContextError {
  constructor(message, exitCode = 2) {
    super(message, exitCode);
  }
}

/** A compaction refused: a plan that no longer holds, a summary too long
 * or empty. Nothing was written. */
class CompactionError extends InputError {}

/** The protected content does not fit the budget (exit status 1). */
class BudgetExceeded extends ContextError {
  constructor(message, fields = {}, exitCode = 1) {
    super(message, exitCode);
    this.required = fields.required;
    this.available = fields.available;
    this.maxTokens = fields.maxTokens;
    this.reserve = fields.reserve;
  }
}

/** A store that fails, or a save that conflicts with another writer. */
class StoreError extends ContextError {}

/** A store, chat, branch or checkpoint named wrong (exit status 2). */
class ChatError extends StoreError {
  constructor(message, exitCode = 2) {
    super(message, exitCode);
  }
}

const CLASSES = { ContextError, InputError, CompactionError, BudgetExceeded, StoreError, ChatError };

/** The package's error for an error of the addon, whose message is the
 * JSON payload {class, message, exitCode, ...}. */
function fromNative(error) {
  let payload;
  try {
    payload = JSON.parse(error && error.message);
  } catch {
    return error;
  }
  const Class = payload && CLASSES[payload.class];
  if (!Class) return error;
  if (Class === BudgetExceeded) return new BudgetExceeded(payload.message, payload, payload.exitCode);
  return new Class(payload.message, payload.exitCode);
}

function call(work) {
  try {
    return work();
  } catch (error) {
    throw fromNative(error);
  }
}

async function later(promise) {
  try {
    return await promise;
  } catch (error) {
    throw fromNative(error);
  }
}

// ---------------------------------------------------------------- values in

function typeOf(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** A string argument; another type is a TypeError, as Node's own APIs throw. */
function stringArg(value, what) {
  if (typeof value !== 'string') {
    throw new TypeError(`${what} must be a string, not ${typeOf(value)}`);
  }
  return value;
}

function optionalString(value, what) {
  return value === undefined || value === null ? undefined : stringArg(value, what);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The JSON text of `value`: a string as it is (JSON text), bytes as
 * UTF-8, anything else written by JSON.stringify. */
function jsonText(value, what) {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) {
    try {
      return utf8.decode(value);
    } catch {
      throw new InputError(`${what} is not UTF-8`);
    }
  }
  let text;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new InputError(`${what} cannot be written as JSON: ${error.message}`);
  }
  if (text === undefined) {
    throw new InputError(`${what} cannot be written as JSON: it is ${typeOf(value)}`);
  }
  return text;
}

function isPlainObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

/** The options object of a call (undefined or null: none). */
function optionsObject(options, what = 'options') {
  if (options === undefined || options === null) return {};
  if (!isPlainObject(options)) throw new InputError(`${what} must be an object, not ${typeOf(options)}`);
  return options;
}

const CALLBACKS = ['onWarning', 'onExplain'];

/**
 * Splits `options` into what the package reads itself (the callbacks and
 * `taken`, each read by its reader) and the rest, as JSON text for the
 * addon: a value JSON cannot hold (a function, a symbol, a BigInt) is an
 * InputError naming its option.
 */
function splitOptions(options, taken = {}, base = {}) {
  const given = optionsObject(options);
  const own = { ...base };
  const rest = {};
  for (const [key, value] of Object.entries(given)) {
    if (CALLBACKS.includes(key)) {
      if (value !== undefined && value !== null && typeof value !== 'function') {
        throw new InputError(`${key} must be a function, not ${typeOf(value)}`);
      }
      own[key] = value ?? undefined;
    } else if (Object.hasOwn(taken, key)) {
      own[key] = taken[key](value, key);
    } else {
      if (['function', 'symbol', 'bigint'].includes(typeof value)) {
        throw new InputError(`${key} cannot be ${typeof value}: give a JSON value`);
      }
      rest[key] = value;
    }
  }
  return { own, json: jsonText(rest, 'options') };
}

/** `previous`: a build's report as an object or its JSON text. */
function previousText(value, key = 'previous') {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string' || value instanceof Uint8Array || isPlainObject(value)) {
    return jsonText(value, key);
  }
  throw new InputError(`${key} must be a build's report (an object) or its JSON text, not ${typeOf(value)}`);
}

function booleanOption(value, key) {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') throw new InputError(`${key} must be a boolean, not ${typeOf(value)}`);
  return value;
}

function outputOption(value, key = 'output') {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new InputError(`${key} must be a string, not ${typeOf(value)}`);
  return value;
}

/** `native` of a compaction: the providers' own items, an object or its JSON. */
function nativeText(value, key = 'native') {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string' || value instanceof Uint8Array || isPlainObject(value)) {
    return jsonText(value, key);
  }
  throw new InputError(`${key} must be an object or its JSON text, not ${typeOf(value)}`);
}

const BUILD_TAKEN = { previous: previousText, lossyUnicode: booleanOption };

/** Options that take nothing but the callbacks and `only`. */
function onlyOptions(options, function_, only) {
  const given = optionsObject(options);
  for (const key of Object.keys(given)) {
    if (!only.includes(key) && !CALLBACKS.includes(key)) {
      throw new InputError(`${function_}(): unknown option ${JSON.stringify(key)}; the options are: ${[...only, ...CALLBACKS].join(', ')}`);
    }
  }
  return splitOptions(given).own;
}

/** `base` with the callbacks `given` sets: a call's own replace its
 * builder's or session's. */
function withCallbacks(base, given) {
  const own = { ...base };
  for (const key of CALLBACKS) if (given[key]) own[key] = given[key];
  return own;
}

// ---------------------------------------------------------------- values out

/**
 * The value of an outcome of the addon ({json | text, warnings, explained}):
 * the breakdown of `explain` goes to `onExplain` (else standard error, as
 * the CLI writes it), each warning to `onWarning` (else
 * process.emitWarning(message, 'ContextWarning')), and the body is parsed
 * (or `body`, when the caller has put it together).
 */
function deliver(outcome, own, body) {
  if (outcome.explained != null) {
    if (own.onExplain) own.onExplain(outcome.explained);
    else process.stderr.write(outcome.explained);
  }
  warn(outcome.warnings, own);
  if (body !== undefined) return body;
  return outcome.text != null ? outcome.text : JSON.parse(outcome.json);
}

function warn(warnings, own) {
  for (const message of warnings) {
    if (own.onWarning) own.onWarning(message);
    else process.emitWarning(message, 'ContextWarning');
  }
}

// ---------------------------------------------------------------- build, count

/** `agent-context build`: the prompt of `session` within the budget. */
function build(session, options) {
  const { own, json } = splitOptions(options, BUILD_TAKEN);
  const text = jsonText(session, 'session');
  return deliver(call(() => native.build(text, json, own.previous, own.lossyUnicode ?? false)), own);
}

/** `build` on the libuv thread pool: a Promise of the same output. */
async function buildAsync(session, options) {
  const { own, json } = splitOptions(options, BUILD_TAKEN);
  const text = jsonText(session, 'session');
  return deliver(await later(native.buildAsync(text, json, own.previous, own.lossyUnicode ?? false)), own);
}

/** `agent-context count`: the tokens of `text` for `model`. */
function count(text, options) {
  stringArg(text, 'text');
  const { own, json } = splitOptions(options);
  const counted = call(() => native.count(text, json));
  warn(counted.warnings, own);
  return counted.tokens;
}

// ---------------------------------------------------------------- ContextBuilder

// Each builder's addon object and callbacks, for the sessions made of it.
const builders = new WeakMap();
const ADOPT = Symbol('adopt');
const BUILDER_CALL = ['output', 'previous', 'lossyUnicode'];

/** Build settings read and compiled once: the options of `build`. */
class ContextBuilder {
  #native;
  #own;

  constructor(options, adopted) {
    if (options === ADOPT) {
      ({ native: this.#native, own: this.#own } = adopted);
    } else {
      const { own, json } = splitOptions(options);
      this.#own = own;
      this.#native = call(() => new native.NativeBuilder(json));
    }
    builders.set(this, { native: this.#native, own: this.#own });
  }

  /** The settings, as options: each as a value the option takes back. */
  get options() {
    return JSON.parse(this.#native.options());
  }

  /** A copy of this builder with some options changed. */
  withOptions(more) {
    const { own, json } = splitOptions(more, {}, this.#own);
    const next = call(() => this.#native.withOptions(json));
    return new ContextBuilder(ADOPT, { native: next, own });
  }

  /** Builds `session` with these settings; `output`, `previous` and
   * `lossyUnicode` are this build's. */
  build(session, options) {
    const [text, own, args] = this.#call(session, options);
    return deliver(call(() => this.#native.build(text, ...args)), own);
  }

  /** `build` on the libuv thread pool. */
  async buildAsync(session, options) {
    const [text, own, args] = this.#call(session, options);
    return deliver(await later(this.#native.buildAsync(text, ...args)), own);
  }

  #call(session, options) {
    const own = withCallbacks(this.#own, onlyOptions(options, 'build', BUILDER_CALL));
    const opts = optionsObject(options);
    const args = [outputOption(opts.output), previousText(opts.previous), booleanOption(opts.lossyUnicode, 'lossyUnicode')];
    return [jsonText(session, 'session'), own, args];
  }
}

let defaultBuilder;

/** The addon builder and callbacks of `builder` (a default one if none). */
function builderOf(builder) {
  if (builder === undefined || builder === null) {
    defaultBuilder ??= new ContextBuilder();
    return builders.get(defaultBuilder);
  }
  const found = builders.get(builder);
  if (!found) throw new TypeError(`builder must be a ContextBuilder, not ${typeOf(builder)}`);
  return found;
}

// ---------------------------------------------------------------- Session

const COMPACTION_KEYS = ['keepTokens', 'summarizerModel', 'summarizerMaxTokens', 'summaryTokens', 'instructions', 'output'];

/** The token of a plan: the string, or the object `planCompaction` returned. */
function planToken(plan) {
  if (typeof plan === 'string') return plan;
  if (!isPlainObject(plan)) throw new TypeError(`plan must be a string or a plan object, not ${typeOf(plan)}`);
  if (typeof plan.plan === 'string') return plan.plan;
  const reason = plan.reason != null ? ` (${plan.reason})` : '';
  throw new InputError(`the plan holds no plan to apply: there was nothing to fold${reason}`);
}

/** A conversation built turn after turn with a builder's settings, at the
 * cost of what is new. Synchronous: the per-turn path. */
class Session {
  #native;
  #own;
  /** The rows of the last report or `openai` messages: a build's output
   * names the rows it shares with them by index (node/src/rows.rs). */
  #rows = { messages: [], included: [], decisions: [] };

  constructor(builder, state, options) {
    const { native: nativeBuilder, own } = builderOf(builder);
    this.#own = withCallbacks(own, onlyOptions(options, 'Session', ['lossyUnicode']));
    const text = state === undefined || state === null ? undefined : jsonText(state, 'state');
    const lossy = booleanOption(optionsObject(options).lossyUnicode, 'lossyUnicode');
    this.#native = call(() => new native.NativeSession(nativeBuilder, text, lossy));
  }

  /** Appends one chunk (an object, or its JSON); on error nothing changes. */
  push(chunk, options) {
    const lossy = lossyOf(options, 'push');
    const text = jsonText(chunk, 'chunk');
    call(() => this.#native.push(text, lossy));
  }

  /** Appends chunks (an array, or its JSON), all or nothing. */
  extend(chunks, options) {
    const lossy = lossyOf(options, 'extend');
    const text = jsonText(chunks, 'chunks');
    call(() => this.#native.extend(text, lossy));
  }

  /** This turn's prompt, in `output` (the builder's by default). */
  build(options) {
    const own = withCallbacks(this.#own, onlyOptions(options, 'build', ['output']));
    const output = outputOption(optionsObject(options).output);
    const outcome = call(() => this.#native.build(output));
    if (!outcome.rows) return deliver(outcome, own);
    const body = this.#assemble(JSON.parse(outcome.json));
    return deliver({ ...outcome, json: undefined }, own, body);
  }

  /** The output of `rows` ({head, messages, included?, decisions?}): each
   * list's rows, an index taking the row the last output had there. */
  #assemble(rows) {
    const take = (name) => {
      const before = this.#rows[name];
      const list = rows[name].map((row) => (typeof row === 'number' ? before[row] : row));
      this.#rows[name] = list;
      return list;
    };
    const { head } = rows;
    head.messages = take('messages');
    if (rows.decisions !== undefined) {
      head.included = take('included');
      head.decisions = take('decisions');
    }
    return head;
  }

  /** Plans a compaction of the history under the builder's settings. */
  planCompaction(options) {
    const json = jsonText(optionsObject(options), 'options');
    return JSON.parse(call(() => this.#native.planCompaction(json)));
  }

  /** Applies a plan with `summary`; `native` keeps the providers' items. */
  applyCompaction(plan, summary, options) {
    const token = planToken(plan);
    stringArg(summary, 'summary');
    onlyOptions(options, 'applyCompaction', ['native']);
    const nativeItems = nativeText(optionsObject(options).native);
    return JSON.parse(call(() => this.#native.applyCompaction(token, summary, nativeItems)));
  }

  /** The session as JSON: what `build` would take. */
  state() {
    return JSON.parse(call(() => this.#native.state()));
  }

  /** What the last build did. */
  stats() {
    return call(() => this.#native.stats());
  }

  /** The chunks in the session. */
  get length() {
    return this.#native.length;
  }
}

function lossyOf(options, function_) {
  onlyOptions(options, function_, ['lossyUnicode']);
  return booleanOption(optionsObject(options).lossyUnicode, 'lossyUnicode');
}

// ---------------------------------------------------------------- Engine

const APPEND_TAKEN = {};
const ENGINE_BUILD_TAKEN = { previous: previousText };

/** A durable chat of a store (a SQLite file path or a postgres:// URL),
 * driven as `agent-context chat` drives it. */
class Engine {
  #native;
  #own;
  #target;

  constructor(db, chat, options) {
    stringArg(db, 'db');
    stringArg(chat, 'chat');
    const given = onlyOptions(options, 'Engine', ['branch']);
    const branch = optionalString(optionsObject(options).branch, 'branch');
    this.#own = given;
    this.#target = { db, chat, branch: branch ?? null };
    this.#native = call(() => new native.NativeEngine(db, chat, branch));
  }

  /** The store's location. */
  get db() {
    return this.#target.db;
  }

  /** The chat's id. */
  get chat() {
    return this.#target.chat;
  }

  /** The branch this engine is pinned to (null: the active one). */
  get branch() {
    return this.#target.branch;
  }

  #appendArgs(input, options) {
    const text = Array.isArray(input) ? jsonText({ chunks: input }, 'input') : jsonText(input, 'input');
    const { json } = splitOptions(options, APPEND_TAKEN);
    return [text, json];
  }

  /** `chat append`: a session, one chunk, an array of chunks, or JSON
   * (or JSON Lines) text of these, in one save. */
  async append(input, options) {
    const args = this.#appendArgs(input, options);
    return deliver(await later(this.#native.append(...args)), this.#own);
  }

  /** `append`, in place. */
  appendSync(input, options) {
    const args = this.#appendArgs(input, options);
    return deliver(call(() => this.#native.appendSync(...args)), this.#own);
  }

  #buildArgs(options) {
    const { own, json } = splitOptions(options, ENGINE_BUILD_TAKEN, this.#own);
    return [own, json, own.previous];
  }

  /** `chat build`: the branch's prompt, with `build`'s options. */
  async build(options) {
    const [own, ...args] = this.#buildArgs(options);
    return deliver(await later(this.#native.build(...args)), own);
  }

  /** `build`, in place. */
  buildSync(options) {
    const [own, ...args] = this.#buildArgs(options);
    return deliver(call(() => this.#native.buildSync(...args)), own);
  }

  /** `chat compact --plan`: the compaction's options and the chat's build
   * settings. */
  async planCompaction(options) {
    const { json } = splitOptions(options);
    return deliver(await later(this.#native.planCompaction(json)), this.#own);
  }

  /** `chat compact --apply`: the plan (its token or object), the summary,
   * and the plan's build settings; `native` keeps the providers' items. */
  async applyCompaction(plan, summary, options) {
    const token = planToken(plan);
    stringArg(summary, 'summary');
    const { own, json } = splitOptions(options, { native: nativeText });
    return deliver(await later(this.#native.applyCompaction(token, summary, own.native, json)), this.#own);
  }

  /** `chat export`: the branch as session JSON. */
  async export() {
    return deliver(await later(this.#native.export()), this.#own);
  }

  /** `chat checkpoint NAME [--force]`. */
  async checkpoint(name, options) {
    stringArg(name, 'name');
    onlyOptions(options, 'checkpoint', ['force']);
    const force = booleanOption(optionsObject(options).force, 'force');
    return deliver(await later(this.#native.checkpoint(name, force)), this.#own);
  }

  /** `chat restore CHECKPOINT [--name NAME]`. */
  async restore(checkpoint, options) {
    stringArg(checkpoint, 'checkpoint');
    onlyOptions(options, 'restore', ['name']);
    const name = optionalString(optionsObject(options).name, 'name');
    return deliver(await later(this.#native.restore(checkpoint, name)), this.#own);
  }

  /** `chat fork --name NAME`. */
  async fork(name) {
    stringArg(name, 'name');
    return deliver(await later(this.#native.fork(name)), this.#own);
  }

  /** `chat rewind --to CHUNK [--name NAME]`. */
  async rewind(to, options) {
    stringArg(to, 'to');
    onlyOptions(options, 'rewind', ['name']);
    const name = optionalString(optionsObject(options).name, 'name');
    return deliver(await later(this.#native.rewind(to, name)), this.#own);
  }

  /** `chat switch NAME`. */
  async switch(name) {
    stringArg(name, 'name');
    return deliver(await later(this.#native.switch(name)), this.#own);
  }

  /** `chat branches`. */
  async branches() {
    return deliver(await later(this.#native.branches()), this.#own);
  }

  /** `chat list`: the chats of the store. */
  async chats() {
    return deliver(await later(this.#native.chats()), this.#own);
  }
}

// ---------------------------------------------------------------- AI SDK

/**
 * The session of AI SDK messages (an array of `UIMessage`s or
 * `ModelMessage`s, or `{system, messages}`), as `--input ai-sdk` reads
 * them: `{system_prompt, chunks}`. Parts no chunk holds (images, files,
 * sources) are left out with one warning. Options: `start` (the place
 * of the first message in the whole history: ids follow it, so each
 * turn's new messages can be appended), `onWarning`, `lossyUnicode`.
 */
function fromAiSdk(messages, options) {
  onlyOptions(options, 'fromAiSdk', ['start', 'lossyUnicode']);
  const { own } = splitOptions(options, { start: startOption, lossyUnicode: booleanOption });
  const text = jsonText(messages, 'messages');
  return deliver(call(() => native.fromAiSdk(text, own.start ?? 0, own.lossyUnicode ?? false)), own);
}

/** `start`: a message's place in a history, 0 or more. */
function startOption(value, key) {
  if (value === undefined || value === null) return 0;
  if (!Number.isSafeInteger(value) || value < 0 || value > 0xffffffff) {
    throw new InputError(`${key} must be a whole number of messages, 0 or more, not ${JSON.stringify(value) ?? typeOf(value)}`);
  }
  return value;
}

/**
 * `build` with `output: 'ai-sdk'`: the AI SDK's `{system, messages}` for
 * `generateText`. `session` is a session, or AI SDK messages with
 * `input: 'ai-sdk'`.
 */
function toAiSdk(session, options) {
  return build(session, { ...optionsObject(options), output: 'ai-sdk' });
}

// ---------------------------------------------------------------- exports

const OUTPUTS = Object.freeze(native.outputs());
const version = native.version();

module.exports = {
  build,
  buildAsync,
  count,
  ContextBuilder,
  Session,
  Engine,
  ContextError,
  InputError,
  CompactionError,
  BudgetExceeded,
  StoreError,
  ChatError,
  fromAiSdk,
  toAiSdk,
  OUTPUTS,
  version,
};
