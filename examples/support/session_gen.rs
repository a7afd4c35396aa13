//! A deterministic generator of realistic agent sessions, for examples,
//! replay tests and benchmarks (not part of the library's API).
//!
//! Each turn is a user request, some thinking, one to three tool calls with
//! results (prose, Rust code, JSON, CJK text, emoji, long lines, logs), and an
//! assistant answer. An agent loop ([`agent_loop`]) is one instruction, then
//! model call after model call with tool calls and results and no new user
//! message (or only a few). The same seed always gives the same session.
#![allow(dead_code)]

use agent_context::{ChunkKind, MemoryChunk, MemoryState, Retention, Role};
use serde_json::json;

/// xorshift64*: small, fast, and the same everywhere.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `lo..hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo) as u64) as usize
    }

    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.range(0, items.len())]
    }
}

const WORDS: &[&str] = &[
    "the", "parser", "returns", "an", "error", "when", "input", "is", "empty", "cache", "budget",
    "tokens", "request", "handler", "retries", "timeout", "config", "value", "field", "module",
    "test", "fails", "because", "offset", "index", "buffer", "stream", "async", "lock", "queue",
];

const CJK: &[&str] = &[
    "漢字",
    "テスト",
    "데이터",
    "缓存",
    "错误",
    "関数",
    "模块",
    "请求",
];
const EMOJI: &[&str] = &["🦀", "✅", "❌", "🚀", "👩‍💻", "🔥"];

pub fn prose(rng: &mut Rng, words: usize) -> String {
    let mut out = String::new();
    for i in 0..words {
        if i > 0 {
            out.push(if rng.range(0, 14) == 0 { '\n' } else { ' ' });
        }
        match rng.range(0, 40) {
            0 => out.push_str(rng.pick(CJK)),
            1 => out.push_str(rng.pick(EMOJI)),
            _ => out.push_str(rng.pick(WORDS)),
        }
    }
    out.push('.');
    // Text parsed from JSON holds no spare capacity; neither should ours.
    out.shrink_to_fit();
    out
}

fn code(rng: &mut Rng, lines: usize) -> String {
    let mut out = code_lines(rng, lines);
    out.shrink_to_fit();
    out
}

fn code_lines(rng: &mut Rng, lines: usize) -> String {
    let mut out = String::from("use std::collections::HashMap;\n\n");
    for i in 0..lines {
        let word = rng.pick(WORDS);
        match rng.range(0, 5) {
            0 => out.push_str(&format!(
                "pub fn {word}_{i}(input: &str) -> Result<usize, Error> {{\n"
            )),
            1 => out.push_str(&format!(
                "    let {word} = map.get(\"{word}\").copied().unwrap_or({i});\n"
            )),
            2 => {
                let comment = prose(rng, 8);
                out.push_str(&format!("    // {comment}\n"))
            }
            3 => out.push_str("    }\n"),
            _ => {
                let limit = rng.range(0, 999);
                out.push_str(&format!(
                    "    if {word} > {limit} {{ return Err(Error::Overflow); }}\n"
                ))
            }
        }
    }
    out
}

fn json_rows(rng: &mut Rng, rows: usize) -> serde_json::Value {
    let rows: Vec<_> = (0..rows)
        .map(|i| {
            let (name, score) = (rng.pick(WORDS), rng.range(0, 10_000) as f64 / 100.0);
            let tags = [rng.pick(WORDS), rng.pick(CJK)];
            json!({"id": i, "name": name, "score": score, "tags": tags, "ok": rng.range(0, 2) == 1})
        })
        .collect();
    json!({ "rows": rows, "total": rows.len() })
}

fn log_lines(rng: &mut Rng, lines: usize) -> String {
    let mut out: String = (0..lines)
        .map(|i| {
            let long = if rng.range(0, 30) == 0 {
                let width = rng.range(200, 2_000);
                "x".repeat(width)
            } else {
                String::new()
            };
            let level = rng.pick(&["INFO", "WARN", "DEBUG"]);
            let word = rng.pick(WORDS);
            format!("[{i:05}] {level} {word} {}{long}\n", rng.range(0, 1 << 20))
        })
        .collect();
    out.shrink_to_fit();
    out
}

/// Appends one turn (about `scale` × 600 tokens) to `state`.
pub fn push_turn(state: &mut MemoryState, rng: &mut Rng, turn: usize, scale: usize) {
    let id = |what: &str, n: usize| format!("t{turn}-{what}{n}");
    let words = rng.range(10, 60);
    let request = prose(rng, words);
    state
        .chunks
        .push(MemoryChunk::agent(id("user", 0), Role::User, request));
    let words = rng.range(20, 80) * scale;
    let thought = prose(rng, words);
    state
        .chunks
        .push(MemoryChunk::new(id("think", 0), ChunkKind::Thinking).with_text(thought));
    for call in 0..rng.range(1, 4) {
        let call_id = id("call", call);
        let result = MemoryChunk::new(id("result", call), ChunkKind::Environment);
        let (tool, result) = match rng.range(0, 4) {
            0 => {
                let lines = rng.range(20, 80) * scale;
                ("read_file", result.with_text(code(rng, lines)))
            }
            1 => {
                let rows = rng.range(3, 15) * scale;
                ("query", result.with_data(json_rows(rng, rows)))
            }
            2 => {
                let lines = rng.range(10, 40) * scale;
                ("bash", result.with_text(log_lines(rng, lines)))
            }
            _ => {
                let words = rng.range(60, 300) * scale;
                ("fetch_url", result.with_text(prose(rng, words)))
            }
        };
        let arg = json!({"arg": rng.pick(WORDS)});
        state.chunks.push(
            MemoryChunk::new(id("tool", call), ChunkKind::Workflow)
                .with_tool(tool)
                .with_call_id(&call_id)
                .with_data(arg),
        );
        state
            .chunks
            .push(result.with_tool(tool).with_call_id(&call_id));
    }
    let words = rng.range(20, 120);
    let answer = prose(rng, words);
    state
        .chunks
        .push(MemoryChunk::agent(id("answer", 0), Role::Assistant, answer));
}

/// A session of `turns` turns after a system prompt and a pinned task.
pub fn session(seed: u64, turns: usize, scale: usize) -> MemoryState {
    chat(seed, turns, scale).state(turns)
}

/// [`session`] turn by turn, as a live chat adds it: its opening (the
/// system prompt and the pinned task), then each turn's chunks as a step.
pub fn chat(seed: u64, turns: usize, scale: usize) -> AgentLoop {
    let mut rng = Rng::new(seed);
    let opening = MemoryState::new()
        .with_system_prompt("You are a careful coding agent. Use tools; never guess.")
        .with_chunk(
            MemoryChunk::agent(
                "task",
                Role::User,
                "Keep the service green while refactoring the cache.",
            )
            .pinned(),
        );
    let steps = (0..turns)
        .map(|turn| {
            let mut state = MemoryState::new();
            push_turn(&mut state, &mut rng, turn, scale);
            state.chunks
        })
        .collect();
    AgentLoop { opening, steps }
}

/// One turn of about 8 KB to append, for the store benches: a user message, a tool call, its result and
/// the assistant's reply.
pub fn appended_turn(rng: &mut Rng, n: usize) -> Vec<MemoryChunk> {
    let mut text = |words, bytes| {
        let mut text = prose(rng, words);
        text.truncate(text.floor_char_boundary(bytes));
        text
    };
    let call = format!("bench-call-{n}");
    vec![
        MemoryChunk::agent(format!("bench-user-{n}"), Role::User, text(120, 600)),
        MemoryChunk::new(format!("bench-tool-{n}"), ChunkKind::Workflow)
            .with_tool("bash")
            .with_call_id(&call)
            .with_data(json!({"command": "cargo test --workspace"})),
        MemoryChunk::new(format!("bench-result-{n}"), ChunkKind::Environment)
            .with_tool("bash")
            .with_call_id(&call)
            .with_text(text(1_300, 6_500)),
        MemoryChunk::agent(format!("bench-answer-{n}"), Role::Assistant, text(180, 900)),
    ]
}

/// What an agent loop holds beside its model calls.
#[derive(Debug, Clone, Copy)]
pub struct LoopShape {
    /// Model calls (steps) after the instruction.
    pub steps: usize,
    /// The smallest and largest tool result in bytes; sizes are drawn
    /// log-uniformly between them, so most results are small and a few
    /// are large, as in a coding agent's logs.
    pub result_bytes: (usize, usize),
    /// A new user message before every this many steps.
    pub user_every: Option<usize>,
    /// A second user message before this step.
    pub second_user_at: Option<usize>,
    /// A pinned assistant note in this step.
    pub pinned_at: Option<usize>,
    /// The first result of this step is `critical`.
    pub critical_at: Option<usize>,
}

impl LoopShape {
    /// `steps` model calls with results from a few bytes to ~20 KB, and
    /// nothing else.
    pub fn new(steps: usize) -> Self {
        LoopShape {
            steps,
            result_bytes: (4, 20_000),
            user_every: None,
            second_user_at: None,
            pinned_at: None,
            critical_at: None,
        }
    }
}

/// An agent loop: a system prompt and an instruction, then its steps, each
/// the chunks of one model call followed by the results that answer it (or,
/// for a [`chat`], each a whole turn).
#[derive(Debug, Clone)]
pub struct AgentLoop {
    pub opening: MemoryState,
    pub steps: Vec<Vec<MemoryChunk>>,
}

impl AgentLoop {
    /// The opening and the first `steps` steps, as one session.
    pub fn state(&self, steps: usize) -> MemoryState {
        let mut state = self.opening.clone();
        state
            .chunks
            .extend(self.steps[..steps].iter().flatten().cloned());
        state
    }

    /// Every chunk of the loop's steps, in order.
    pub fn chunks(&self) -> impl Iterator<Item = &MemoryChunk> {
        self.steps.iter().flatten()
    }

    /// The steps' chunks in batches of one to four steps (drawn from
    /// `rng`), as an agent saves them.
    pub fn batches(&self, rng: &mut Rng) -> Vec<Vec<MemoryChunk>> {
        let mut batches = Vec::new();
        let mut steps = self.steps.iter();
        loop {
            let take = rng.range(1, 5);
            let batch: Vec<MemoryChunk> = steps.by_ref().take(take).flatten().cloned().collect();
            if batch.is_empty() {
                return batches;
            }
            batches.push(batch);
        }
    }
}

impl AgentLoop {
    /// The loop with every step replaced by one of `steps` (indices into
    /// it), taken in turn: each run of `steps.len()` steps adds the same
    /// text. Ids and call ids name the new step, so they stay unique.
    pub fn repeating(&self, steps: std::ops::Range<usize>) -> AgentLoop {
        let len = steps.len();
        let repeated = (0..self.steps.len())
            .map(|step| {
                let from = steps.start + step % len;
                (self.steps[from].iter())
                    .map(|chunk| renamed(chunk, from, step))
                    .collect()
            })
            .collect();
        AgentLoop {
            opening: self.opening.clone(),
            steps: repeated,
        }
    }
}

/// `chunk` of step `from` as a chunk of step `to` (see [`loop_step`]'s ids).
fn renamed(chunk: &MemoryChunk, from: usize, to: usize) -> MemoryChunk {
    let mut chunk = chunk.clone();
    chunk.id = chunk
        .id
        .replacen(&format!("s{from}-"), &format!("s{to}-"), 1);
    if let Some(call) = &chunk.call_id {
        let call = call.replacen(&format!("call_{from}_"), &format!("call_{to}_"), 1);
        chunk.call_id = Some(call.into());
    }
    chunk
}

/// A generated agent loop of `shape`.
pub fn agent_loop(seed: u64, shape: &LoopShape) -> AgentLoop {
    let mut rng = Rng::new(seed);
    let opening = MemoryState::new()
        .with_system_prompt(
            "You are an autonomous coding agent. Work until the task is done; \
             call tools, read their results, never ask the user.",
        )
        .with_chunk(MemoryChunk::agent(
            "instruction",
            Role::User,
            "Make `cargo test --workspace` pass and keep clippy clean.",
        ));
    let steps = (0..shape.steps)
        .map(|step| loop_step(&mut rng, step, shape))
        .collect();
    AgentLoop { opening, steps }
}

/// The chunks of step `step`: a user message when the shape says so, then
/// optional thinking and text, one to three tool calls, and their results.
pub fn loop_step(rng: &mut Rng, step: usize, shape: &LoopShape) -> Vec<MemoryChunk> {
    let id = |what: &str| format!("s{step}-{what}");
    let mut chunks = Vec::new();
    let user = shape.second_user_at == Some(step)
        || shape
            .user_every
            .is_some_and(|n| step > 0 && step.is_multiple_of(n));
    if user {
        let words = rng.range(5, 40);
        let text = format!("Also: {}", prose(rng, words));
        chunks.push(MemoryChunk::agent(id("user"), Role::User, text));
    }
    if rng.range(0, 2) == 0 {
        let words = rng.range(10, 150);
        let thought = prose(rng, words);
        chunks.push(MemoryChunk::new(id("think"), ChunkKind::Thinking).with_text(thought));
    }
    if rng.range(0, 3) == 0 {
        let words = rng.range(5, 60);
        let text = prose(rng, words);
        chunks.push(MemoryChunk::agent(id("text"), Role::Assistant, text));
    }
    if shape.pinned_at == Some(step) {
        let words = rng.range(20, 60);
        let plan = format!("Plan (keep in view): {}", prose(rng, words));
        chunks.push(MemoryChunk::agent(id("plan"), Role::Assistant, plan).pinned());
    }
    let calls = rng.range(1, 4);
    let mut results = Vec::with_capacity(calls);
    for call in 0..calls {
        let call_id = format!("call_{step}_{call}");
        let (tool, result) = tool_result(rng, id(&format!("result{call}")), shape.result_bytes);
        let arg = match tool {
            "read_file" => json!({"path": format!("src/{}.rs", rng.pick(WORDS))}),
            "query" => json!({"sql": format!("select * from {} limit 50", rng.pick(WORDS))}),
            _ => json!({"command": format!("cargo test {}", rng.pick(WORDS))}),
        };
        chunks.push(
            MemoryChunk::new(id(&format!("call{call}")), ChunkKind::Workflow)
                .with_action("tool_call")
                .with_tool(tool)
                .with_call_id(&call_id)
                .with_data(arg),
        );
        let mut result = result.with_tool(tool).with_call_id(&call_id);
        if call == 0 && shape.critical_at == Some(step) {
            result = result.with_retention(Retention::Critical);
        }
        results.push(result);
    }
    chunks.extend(results);
    chunks
}

/// A tool result of about a log-uniform size in `bytes`: source code, a
/// log, a JSON body, one long line of minified JSON, or prose.
fn tool_result(rng: &mut Rng, id: String, (lo, hi): (usize, usize)) -> (&'static str, MemoryChunk) {
    let unit = rng.next() as f64 / u64::MAX as f64;
    let (lo, hi) = ((lo.max(1) as f64).ln(), (hi.max(lo + 1) as f64).ln());
    let bytes = (lo + (hi - lo) * unit).exp() as usize;
    let result = MemoryChunk::new(id, ChunkKind::Environment);
    let cut = |mut text: String| {
        text.truncate(text.floor_char_boundary(bytes));
        text
    };
    match rng.range(0, 5) {
        0 => (
            "read_file",
            result.with_text(cut(code(rng, bytes / 30 + 1))),
        ),
        1 => (
            "bash",
            result.with_text(cut(log_lines(rng, bytes / 25 + 1))),
        ),
        2 => ("query", result.with_data(json_rows(rng, bytes / 120 + 1))),
        3 => {
            let line = serde_json::to_string(&json_rows(rng, bytes / 90 + 1)).unwrap();
            ("fetch_url", result.with_text(cut(line)))
        }
        _ => ("bash", result.with_text(cut(prose(rng, bytes / 5 + 1)))),
    }
}
