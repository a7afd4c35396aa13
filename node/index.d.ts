// Types of the `agent-context` package (written by hand: the build writes
// no types). Every call is a command of the agent-context CLI: the options
// are its flags in camelCase (`--max-tokens` is `maxTokens`), with the same
// defaults (null or undefined is the default), and the result is what it
// prints, parsed with JSON.parse.

/** Any JSON value, as JSON.parse gives it. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A session: `{system_prompt, fragments, context_management, chunks}` as an
 * object, or its JSON text (a string, or UTF-8 bytes); with `input:
 * 'ai-sdk'`, AI SDK messages (an array, or `{system, messages}`). */
export type SessionInput = Record<string, unknown> | readonly unknown[] | string | Uint8Array;

/** One chunk of a session (`{id, kind, ...}`), or its JSON text. */
export type ChunkInput = Record<string, unknown> | string | Uint8Array;

/** The name of an output (`--output`), in the CLI's order. */
export type Output =
  | 'report'
  | 'openai'
  | 'anthropic'
  | 'text'
  | 'openai-native'
  | 'openai-responses'
  | 'anthropic-native'
  | 'ai-sdk';

/** Every output's name, in the CLI's order. */
export const OUTPUTS: readonly Output[];

/** The package's version. */
export const version: string;

/** The shape of a compaction's summarization request. */
export type RequestFormat = 'messages' | 'openai' | 'anthropic';

/** Called with each warning the CLI writes as `warning: …`. Without one,
 * `process.emitWarning(message, 'ContextWarning')`. */
export type WarningCallback = (message: string) => void;

/** Called with the breakdown of `explain: true`. Without one, it is written
 * to standard error, as the CLI writes it. */
export type ExplainCallback = (breakdown: string) => void;

/** Where warnings and the `explain` breakdown go. */
export interface Callbacks {
  onWarning?: WarningCallback | null;
  onExplain?: ExplainCallback | null;
}

/** A build's report as an object, or its JSON text (`--previous REPORT`). */
export type PreviousReport = Report | Record<string, unknown> | string | Uint8Array;

/** The settings of a build: the flags of `agent-context build`. */
export interface BuildSettings {
  /** `--model` (default `'gpt-4o'`): picks the encoding and the default budget. */
  model?: string | null;
  /** `--max-tokens`: the prompt budget (default: the model's window). */
  maxTokens?: number | null;
  /** `--reserve`: tokens held back for the reply (default 0; 4096 or a quarter
   * of maxTokens for `anthropic-native`). */
  reserve?: number | null;
  /** `--escape` (default `'structural'`). */
  escape?: 'structural' | 'xml' | 'none' | null;
  /** `--framing` (default `'openai'`). */
  framing?: 'openai' | 'none' | null;
  /** `--content-format` (default `'gfm'`; also `'markdown'`). */
  contentFormat?: 'gfm' | 'markdown' | 'commonmark' | 'xml' | null;
  /** `--fragments-format` (default `'xml'`; also `'md'`). */
  fragmentsFormat?: 'xml' | 'markdown' | 'md' | 'toml' | 'toon' | null;
  /** `--group-fragments`. */
  groupFragments?: boolean | null;
  /** `--cap NAME=N`: `{tool_result: 2000, 'tool:bash': 500, 'id:r7': null}` or
   * `['tool_result=2000']`. */
  caps?: Record<string, number | string | null> | string[] | null;
  /** `--cap`, the flag's own name: read as `caps`. */
  cap?: Record<string, number | string | null> | string[] | null;
  /** `--low-water` (default 0.8). */
  lowWater?: number | null;
  /** `--context-management`: Anthropic's object, its JSON text, or the path of
   * a JSON file holding it. */
  contextManagement?: Record<string, unknown> | string | null;
  /** `--compact-at`: an integer is tokens (100000), a number with a fraction a
   * fraction of the budget (0.75); a string is read as the flag reads it
   * (`'1.0'`: the whole budget). */
  compactAt?: number | string | null;
  /** `--exclude-kind`: a kind's name or an array of them. */
  excludeKinds?: string | string[] | null;
  /** `--exclude-kind`, the flag's own name: read as `excludeKinds`. */
  excludeKind?: string | string[] | null;
  /** `--estimate-factor` (1.0 to 16; default 1.6). */
  estimateFactor?: number | string | null;
  /** `--threads` (1 to 64; default: the machine's, at most 4). */
  threads?: number | null;
  /** `--output` (default `'report'`). */
  output?: Output | null;
  /** `--explain`: the breakdown of every decision goes to `onExplain` (or
   * standard error), and the build's own warnings with it. */
  explain?: boolean | null;
  /** Not `--no-cache-control` (default true). */
  cacheControl?: boolean | null;
  /** `--no-cache-control`. */
  noCacheControl?: boolean | null;
  /** `--max-input-bytes`: the most bytes of JSON read. */
  maxInputBytes?: number | null;
  /** `--input` (default `'session'`): `'ai-sdk'` reads the session argument
   * as AI SDK messages, as `fromAiSdk` does. */
  input?: 'session' | 'ai-sdk' | null;
}

/** The options of `build` and `buildAsync`. */
export interface BuildOptions extends BuildSettings, Callbacks {
  /** `--previous`: the report of the previous build of the same session. */
  previous?: PreviousReport | null;
  /** `--lossy-unicode`: a lone surrogate escape reads as U+FFFD. */
  lossyUnicode?: boolean | null;
}

/** A build's settings as `ContextBuilder.options` gives them back. */
export interface Settings {
  model: string;
  maxTokens: number | null;
  reserve: number | null;
  escape: 'structural' | 'xml' | 'none';
  framing: 'openai' | 'none';
  contentFormat: 'gfm' | 'commonmark' | 'xml';
  fragmentsFormat: 'xml' | 'markdown' | 'toml' | 'toon';
  groupFragments: boolean;
  caps: Record<string, number | null>;
  lowWater: number;
  contextManagement: Record<string, Json> | null;
  compactAt: number | string | null;
  excludeKinds: string[];
  estimateFactor: number | null;
  threads: number | null;
  output: Output;
  explain: boolean;
  cacheControl: boolean;
  maxInputBytes: number | null;
  input: 'session' | 'ai-sdk';
}

/** One message of a report. */
export interface ReportMessage {
  role: 'system' | 'user' | 'assistant' | string;
  content: string;
  chunk_ids: string[];
  tokens: number;
  [key: string]: unknown;
}

/** One chunk's decision. */
export interface Decision {
  id: string;
  kind: string;
  tokens: number;
  priority: number;
  protected: boolean;
  decision: 'kept' | 'stubbed' | 'truncated' | 'dropped' | string;
  [key: string]: unknown;
}

/** What a prompt cache keeps of the previous build (`cache`). */
export interface CacheReport {
  stable_prefix_tokens: number;
  broke_at: null | {
    message: number;
    chunk: string;
    cause: 'settings_changed' | 'system_changed' | 'compaction' | 'context_edit' | 'refilled' | 'chunk_changed';
    tokens_lost: number;
  };
}

/** The report of a build (`--output report`, the default). */
export interface Report {
  model: string;
  encoding: string;
  budget: number;
  max_tokens: number;
  reserve_output: number;
  token_count: number;
  token_count_exact: boolean;
  messages: ReportMessage[];
  included: string[];
  excluded: string[];
  truncated: string[];
  elided?: { chunks: number; tokens: number; marker: boolean; summary: boolean } | null;
  trim_target?: number;
  stable_prefix_tokens?: number;
  cache?: CacheReport;
  settings_key: string;
  decisions: Decision[];
  unread_chunks?: number;
  applied_edits?: Json[];
  warnings: string[];
  /** `Engine.build` only: whether it extended the branch's last build. */
  previous_build?: 'extended' | 'none_kept' | 'other_settings' | 'head_moved' | 'unreadable' | 'not_kept';
  compaction?: { id: string; covers: string; chunks: number; tokens: number };
  /** With `compactAt`: whether the history before trimming passed it. */
  compaction_due?: boolean;
  [key: string]: unknown;
}

/** A request body (`openai`, `anthropic`, the native outputs, `ai-sdk`). */
export type RequestBody = { [key: string]: Json };

/** What a build of an output not known to the types returns. */
export type AnyOutput = Report | RequestBody | string;

/** What a build returns for `output`: the report, the text, or a body. */
export type BuildOutput<O> = O extends 'text'
  ? string
  : O extends 'report' | undefined | null
    ? Report
    : O extends 'ai-sdk'
      ? AiSdkMessages
      : RequestBody;

/** `agent-context build`: the prompt of `session` within the budget, as the
 * CLI prints it for the same flags (an object; a string for `text`). */
export function build<const O extends Output | null | undefined = undefined>(
  session: SessionInput,
  options?: BuildOptions & { output?: O },
): BuildOutput<O>;

/** `build` run on the libuv thread pool: the event loop stays free. */
export function buildAsync<const O extends Output | null | undefined = undefined>(
  session: SessionInput,
  options?: BuildOptions & { output?: O },
): Promise<BuildOutput<O>>;

/** The options of `count`. */
export interface CountOptions {
  model?: string | null;
  estimateFactor?: number | string | null;
  onWarning?: WarningCallback | null;
}

/** `agent-context count`: the tokens of `text` for `model`. */
export function count(text: string, options?: CountOptions): number;

/** The options of a builder's own build. */
export interface BuilderBuildOptions extends Callbacks {
  output?: Output | null;
  previous?: PreviousReport | null;
  lossyUnicode?: boolean | null;
}

/** Build settings read and compiled once, for many builds and sessions. */
export class ContextBuilder {
  constructor(options?: BuildSettings & Callbacks);
  /** The settings, each as a value the option takes back. */
  readonly options: Settings;
  /** A copy of this builder with some options changed. */
  withOptions(more: BuildSettings & Callbacks): ContextBuilder;
  /** Builds `session` with these settings; `output` overrides the
   * builder's (without one, the result's type is the builder's output's). */
  build<const O extends Output>(session: SessionInput, options: BuilderBuildOptions & { output: O }): BuildOutput<O>;
  build(session: SessionInput, options?: BuilderBuildOptions): AnyOutput;
  /** `build` run on the libuv thread pool. */
  buildAsync<const O extends Output>(
    session: SessionInput,
    options: BuilderBuildOptions & { output: O },
  ): Promise<BuildOutput<O>>;
  buildAsync(session: SessionInput, options?: BuilderBuildOptions): Promise<AnyOutput>;
}

/** The options of a compaction plan (`chat compact --plan`'s own flags). */
export interface CompactionOptions {
  /** Tokens of the newest history kept verbatim (default: a quarter of the budget). */
  keepTokens?: number | null;
  /** The model that writes the summary (default: the build's). */
  summarizerModel?: string | null;
  /** The summarizer's window (default: its model's). */
  summarizerMaxTokens?: number | null;
  /** The most tokens the summary may take (default 2048). */
  summaryTokens?: number | null;
  /** Instructions replacing the default template. */
  instructions?: string | null;
  /** The request's shape (default `'messages'`). */
  output?: RequestFormat | null;
}

/** A compaction plan, or why there is none. */
export type CompactionPlan =
  | {
      plan: string;
      covers: string;
      folded: { chunks: number; tokens: number; [key: string]: Json };
      remaining: Json;
      request: Json;
      request_tokens: number;
      request_tokens_exact: boolean;
      summary_tokens: number;
    }
  | { plan: null; reason: string };

/** A compaction applied. */
export interface AppliedCompaction {
  compaction: string;
  covers: string;
  tokens_before: number;
  tokens_after: number;
  [key: string]: unknown;
}

/** The providers' own compaction items kept with a summary. */
export type NativeCompaction =
  | { anthropic?: Record<string, unknown>; openai?: Record<string, unknown> }
  | string
  | Uint8Array;

/** What a session's last build did. */
export interface SessionStats {
  chunksRendered: number;
  tokensCounted: number;
  chunksCached: number;
  chunksRestored: number;
  extended: boolean;
  replanned: boolean;
}

/** A conversation built turn after turn with a builder's settings: each
 * build costs what is new, and equals `build` of the whole session given
 * its previous build. Synchronous. */
export class Session {
  constructor(builder?: ContextBuilder | null, state?: SessionInput | null, options?: { lossyUnicode?: boolean | null } & Callbacks);
  push(chunk: ChunkInput, options?: { lossyUnicode?: boolean | null }): void;
  extend(chunks: Record<string, unknown>[] | string | Uint8Array, options?: { lossyUnicode?: boolean | null }): void;
  /** This turn's prompt; `output` overrides the builder's (without one, the
   * result's type is the builder's output's). */
  build<const O extends Output>(options: { output: O } & Callbacks): BuildOutput<O>;
  build(options?: { output?: null } & Callbacks): AnyOutput;
  planCompaction(options?: CompactionOptions): CompactionPlan;
  applyCompaction(plan: string | CompactionPlan, summary: string, options?: { native?: NativeCompaction | null }): AppliedCompaction;
  /** The session as JSON: what `build` would take. */
  state(): { [key: string]: Json };
  stats(): SessionStats;
  /** The chunks in the session. */
  readonly length: number;
}

/** Where an engine stands. */
export interface Position {
  chat: string;
  branch: string;
  head: number | null;
}

/** The options of `Engine.append` (`chat append`'s flags). */
export interface AppendOptions {
  replaceLastAssistant?: boolean | null;
  clearSystem?: boolean | null;
  model?: string | null;
  lossyUnicode?: boolean | null;
}

/** The options of `Engine.build` (`chat build`'s flags). */
export interface EngineBuildOptions extends BuildSettings, Callbacks {
  previous?: PreviousReport | null;
}

/** The build settings a compaction takes: all but output, explain and cache control. */
export type CompactionSettings = Omit<BuildSettings, 'output' | 'explain' | 'cacheControl' | 'noCacheControl'>;

/** A chat of a store (a SQLite file path, created by the first append, or a
 * postgres:// URL), driven as `agent-context chat` drives it. Each method
 * opens the store and saves in one transaction, on the libuv thread pool. */
export class Engine {
  constructor(db: string, chat: string, options?: { branch?: string | null } & Callbacks);
  readonly db: string;
  readonly chat: string;
  /** The branch this engine is pinned to (null: the chat's active branch). */
  readonly branch: string | null;
  append(input: SessionInput | Record<string, unknown>[], options?: AppendOptions): Promise<Position & { appended: number; replaced?: boolean }>;
  appendSync(input: SessionInput | Record<string, unknown>[], options?: AppendOptions): Position & { appended: number; replaced?: boolean };
  build<const O extends Output | null | undefined = undefined>(options?: EngineBuildOptions & { output?: O }): Promise<BuildOutput<O>>;
  buildSync<const O extends Output | null | undefined = undefined>(options?: EngineBuildOptions & { output?: O }): BuildOutput<O>;
  planCompaction(options?: CompactionOptions & CompactionSettings): Promise<CompactionPlan>;
  applyCompaction(
    plan: string | CompactionPlan,
    summary: string,
    options?: CompactionSettings & { native?: NativeCompaction | null },
  ): Promise<Position & AppliedCompaction>;
  export(): Promise<{ [key: string]: Json }>;
  checkpoint(name: string, options?: { force?: boolean | null }): Promise<{ chat: string; checkpoint: string; node: number | null }>;
  restore(checkpoint: string, options?: { name?: string | null }): Promise<Position>;
  fork(name: string): Promise<Position>;
  rewind(to: string, options?: { name?: string | null }): Promise<Position>;
  switch(name: string): Promise<Position>;
  branches(): Promise<{
    chat: string;
    branches: { name: string; head: number | null; chunks: number; active: boolean }[];
    checkpoints: { name: string; node: number | null }[];
  }>;
  chats(): Promise<{
    chats: { id: string; active_branch: string; metadata: Json; created_at_ms: number; updated_at_ms: number }[];
  }>;
}

/** A part of an AI SDK `ModelMessage` as `output: 'ai-sdk'` writes it. */
export type AiSdkPart =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string; providerOptions: { anthropic: { signature: string } } }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: { [key: string]: Json } }
  | {
      type: 'tool-result';
      toolCallId: string;
      toolName: string;
      output:
        | { type: 'text' | 'error-text'; value: string }
        | { type: 'json' | 'error-json'; value: Json };
    };

/** `output: 'ai-sdk'`: the AI SDK's `{system, messages}`, for
 * `generateText({model, system, messages})`. */
export interface AiSdkMessages {
  system?: string;
  messages: (
    | { role: 'user'; content: Extract<AiSdkPart, { type: 'text' }>[] }
    | { role: 'assistant'; content: Exclude<AiSdkPart, { type: 'tool-result' }>[] }
    | { role: 'tool'; content: Extract<AiSdkPart, { type: 'tool-result' }>[] }
  )[];
}

/** A session object, as `fromAiSdk` returns it. */
export type SessionObject = {
  system_prompt?: string;
  chunks: { id: string; kind: string; [key: string]: Json | undefined }[];
};

/** The session of AI SDK messages (`UIMessage[]`, `ModelMessage[]`, or
 * `{system, messages}`), as `--input ai-sdk` reads them. Parts no chunk
 * holds (images, files, sources) are left out with one warning. */
export function fromAiSdk(
  messages: readonly unknown[] | { system?: string | null; messages: readonly unknown[] } | string | Uint8Array,
  options?: {
    /** The place of the first message in the whole history (default 0):
     * chunk ids follow it (`m{start}.0`), so a turn's new messages append to
     * a session or chat without meeting the ids of earlier ones. */
    start?: number | null;
    lossyUnicode?: boolean | null;
  } & Callbacks,
): SessionObject;

/** `build` with `output: 'ai-sdk'`. */
export function toAiSdk(session: SessionInput, options?: Omit<BuildOptions, 'output'>): AiSdkMessages;

/** The base of every error agent-context throws. */
export class ContextError extends Error {
  constructor(message: string, exitCode?: number);
  /** The exit status of the agent-context CLI for the same error. */
  readonly exitCode: number;
}

/** Input or options to fix (exit status 2): invalid JSON or schema, an
 * unknown or mistyped option, a cap too small. The message is the one the
 * CLI prints after `error: `. */
export class InputError extends ContextError {}

/** A compaction refused (a plan that no longer holds, a summary empty or not
 * smaller than its span): nothing was written. */
export class CompactionError extends InputError {}

/** The protected content does not fit the budget (exit status 1). */
export class BudgetExceeded extends ContextError {
  /** Tokens the protected content needs. */
  readonly required: number;
  /** Tokens available: maxTokens - reserve. */
  readonly available: number;
  readonly maxTokens: number;
  readonly reserve: number;
}

/** A store that failed, or a save that conflicted. */
export class StoreError extends ContextError {}

/** A store, chat, branch or checkpoint named wrong (exit status 2). */
export class ChatError extends StoreError {}
