// Compiled (never run) by entry.test.mjs with `tsc --noEmit --strict`: uses
// of the API the types must accept, and misuses (@ts-expect-error) they
// must refuse.
import {
  BudgetExceeded,
  ChatError,
  CompactionError,
  ContextBuilder,
  ContextError,
  Engine,
  InputError,
  OUTPUTS,
  Session,
  StoreError,
  build,
  buildAsync,
  count,
  fromAiSdk,
  toAiSdk,
  version,
  type AiSdkMessages,
  type Output,
  type Report,
  type RequestBody,
  type Settings,
} from 'agent-context';

const session = { system_prompt: 'Be brief.', chunks: [{ id: 'u1', kind: 'agent', role: 'user', text: 'Hi' }] };

const report: Report = build(session, { maxTokens: 8000, reserve: 1000 });
const tokens: number = report.token_count;
const ids: string[] = report.messages[0].chunk_ids;
const text: string = build(session, { output: 'text' });
const body: RequestBody = build('{"chunks": []}', { output: 'openai-native', caps: { tool_result: 2000, 'id:r7': null } });
const later: Promise<string> = buildAsync(session, { output: 'text', onWarning: (m: string) => void m });
const fromReport: Report = build(session, { previous: report, compactAt: 0.75, excludeKinds: ['thinking'] });
const n: number = count('hello', { model: 'gpt-4o', estimateFactor: 1.5 });
const names: readonly Output[] = OUTPUTS;
const history = [{ role: 'user', content: 'Hi' }];
const sdk: AiSdkMessages = toAiSdk(history, { input: 'ai-sdk', maxTokens: 8000 });
const sdkBuild: AiSdkMessages = build(fromAiSdk(history), { output: 'ai-sdk' });
const firstRole: 'user' | 'assistant' | 'tool' = sdk.messages[0].role;
// @ts-expect-error: toAiSdk's output is always ai-sdk
toAiSdk(history, { output: 'openai' });
// @ts-expect-error: an input format no build reads
build(history, { input: 'yaml' });
const v: string = version;

const builder = new ContextBuilder({ model: 'gpt-4o', maxTokens: 128000, explain: true, onExplain: (t: string) => void t });
const settings: Settings = builder.options;
const next: ContextBuilder = builder.withOptions({ output: 'anthropic' });
const anthropic: RequestBody = next.build(session, { output: 'anthropic' });
const asText: Promise<string> = builder.buildAsync(session, { output: 'text' });

const s = new Session(builder, session);
s.push({ id: 'a1', kind: 'agent', role: 'assistant', text: 'Hello' });
s.extend([{ id: 'u2', kind: 'agent', role: 'user', text: 'More' }]);
const turn: Report = s.build({ output: 'report' });
const plan = s.planCompaction({ keepTokens: 2000, output: 'openai' });
if (plan.plan !== null) s.applyCompaction(plan, 'summary', { native: { openai: { type: 'compaction' } } });
const length: number = s.length;
const rendered: number = s.stats().chunksRendered;

async function engine(): Promise<void> {
  const e = new Engine('agent.db', 'run-1', { branch: 'main' });
  const appended: number = (await e.append(session)).appended;
  const built: Report = await e.build({ maxTokens: 8000, previous: report });
  const inPlace: string = e.buildSync({ output: 'text' });
  const planned = await e.planCompaction({ maxTokens: 8000, keepTokens: 2000 });
  if (planned.plan !== null) await e.applyCompaction(planned.plan, 'summary', { maxTokens: 8000 });
  const head: number | null = (await e.rewind('c10', { name: 'retry' })).head;
  const branches = (await e.branches()).branches.map((b) => b.name);
  void [appended, built, inPlace, head, branches, await e.export(), await e.chats()];
  await e.checkpoint('cp', { force: true });
  await e.restore('cp');
  await e.fork('try');
  await e.switch('main');
}

function errors(error: unknown): void {
  if (error instanceof BudgetExceeded) {
    const figures: number[] = [error.required, error.available, error.maxTokens, error.reserve, error.exitCode];
    void figures;
  }
  const classes: (typeof ContextError)[] = [InputError, CompactionError, StoreError, ChatError];
  const base: Error = new InputError('x');
  void [classes, base];
}

// @ts-expect-error: no such output
build(session, { output: 'yaml' });
// @ts-expect-error: maxTokens is a number
build(session, { maxTokens: '8000' });
// @ts-expect-error: no such option
build(session, { maxToken: 8000 });
// @ts-expect-error: count takes text
count(5);
// @ts-expect-error: a builder's build takes no settings
builder.build(session, { maxTokens: 5 });
// @ts-expect-error: the text output is a string
const notReport: Report = build(session, { output: 'text' });
// @ts-expect-error: a compaction prints no build
new Engine('a.db', 'c').planCompaction({ explain: true });

void [tokens, ids, text, body, later, fromReport, n, names, sdkBuild, firstRole, v, settings, anthropic, asText, turn, length, rendered, engine, errors, notReport];
