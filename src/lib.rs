//! Turn an LLM agent's typed memory into the messages sent to the model,
//! trimmed to a token budget with exact tokenizer counts.
//!
//! A long-running agent rebuilds its prompt every turn. agent-context takes
//! the agent's memory (a [`MemoryState`] of typed [`MemoryChunk`]s: user turns,
//! tool calls and results, thinking, delegation, outcomes), renders each chunk
//! as an XML-tagged block, counts it exactly as the provider bills it, and
//! keeps what fits:
//!
//! * **never over budget**: `token_count <= max_tokens - reserve_output` for
//!   every input, or [`ErrorKind::BudgetExceeded`] says how much the protected
//!   content needs;
//! * **never loses what matters**: the system prompt, system, pinned and
//!   `critical` chunks, the latest user message and the newest tool use
//!   survive, so an agent loop of a thousand tool steps after one
//!   instruction never outgrows its window; a tool call and its results are
//!   kept or dropped together; every decision is reported;
//! * **never lets content forge structure**: a tool result containing
//!   `</tool_result><user_message>` cannot become a user message.
//!
//! # Quickstart
//!
//! ```
//! use agent_context::{ContextBuilder, MemoryState};
//!
//! let state = MemoryState::from_json_str(r#"{
//!   "system_prompt": "You are a careful coding agent.",
//!   "chunks": [
//!     {"id": "c1", "kind": "agent", "role": "user", "text": "Fix the failing test", "pinned": true},
//!     {"id": "c2", "kind": "workflow", "action": "tool_call", "tool": "read_file",
//!      "call_id": "call_1", "data": {"path": "src/lib.rs"}},
//!     {"id": "c3", "kind": "environment", "tool": "read_file", "call_id": "call_1",
//!      "success": true, "text": "pub fn add(a: i32, b: i32) -> i32 { a - b }"}
//!   ]
//! }"#)?;
//!
//! let result = ContextBuilder::new()
//!     .model("gpt-4o")
//!     .max_tokens(8_000)
//!     .reserve_output(1_000)
//!     .build(&state)?;
//!
//! assert!(result.token_count <= 7_000);
//! assert!(result.token_count_exact);
//! assert_eq!(result.messages[1].role.as_str(), "user");
//! assert!(result.messages[2].content.starts_with("<tool_call id=\"c2\""));
//! # Ok::<(), agent_context::Error>(())
//! ```
//!
//! # Map
//!
//! * [`MemoryState`], [`MemoryChunk`]: the input, parsed and validated from JSON
//!   (strictly: [`parse_json`] and [`ParseOptions`] say how).
//! * [`render`]: the [`ChunkRenderer`](render::ChunkRenderer) trait, the
//!   default tag table, custom renderers, escaping.
//! * [`tokens`]: exact counting ([`TiktokenCounter`](tokens::TiktokenCounter)),
//!   estimates for other models, message framing, the model table.
//! * [`budget`]: what is protected, what moves together, what was decided,
//!   and Anthropic's `context_management` edits
//!   ([`ContextManagement`](budget::ContextManagement)), applied by us for
//!   every model.
//! * [`ContextBuilder`] (settings) → [`ContextConfig`] (compiled, shared)
//!   → [`BuildResult`]: messages, counts, decisions; a [`BuildCache`] the
//!   caller owns keeps chunks rendered between builds.
//! * [`ContextSession`]: the same, turn after turn, at the cost of what is new.
//! * [`ContextEngine`] over a [`store::Store`]: durable chats with branches
//!   and checkpoints, saved atomically, built within the budget.
//! * [`compaction`]: a durable summary of what a long run drops, planned
//!   and applied in two steps, so the runtime calls its own model between.
//! * [`adapter`]: OpenAI, Anthropic and plain-text output, and the window
//!   as an HTML page.
//! * [`Fragment`](fragment::Fragment) and [`format`](mod@format):
//!   structured system context (role, hints, terms, guardrails, config)
//!   rendered as XML, Markdown, TOML or TOON.
//!
//! # Layers
//!
//! One folder per layer (the root holds only `lib.rs` and `error.rs`). Each
//! imports only from the layers before it; `tests/it/layers.rs` reads this
//! list and fails on an arrow that points up. Bottom up:
//!
//! 1. `error.rs`: [`Error`] and [`ErrorKind`], which every layer returns.
//! 2. `syntax/`: JSON input by this crate's rules ([`parse_json`],
//!    [`JsonText`]), numbers that keep their digits, XML's rules (names,
//!    escaping), and the impls shared strings use.
//! 3. `fragment/` and `content/`: the structured system context (a
//!    [`Fragment`](fragment::Fragment) tree) and semantic content with its
//!    Markdown and XML renderers.
//! 4. `model/`: the input, [`MemoryState`] of [`MemoryChunk`]s, read from
//!    JSON and checked; ids, kinds and roles; Anthropic's
//!    `context_management` request; [`Rows`].
//! 5. `store/` and `tokens/`: the durable chats (which keep chunks as JSON
//!    beside their counts) and exact counting (the model table, estimates,
//!    message framing).
//! 6. `render/`: a chunk to tagged text (the default tag table, custom
//!    renderers, escaping, the native protocol's records).
//! 7. `format/` and `budget/`: fragments as XML, Markdown, TOML or TOON;
//!    the plan (the policy and its rules: what is protected, what moves
//!    together, in what order chunks are cut, the decisions).
//! 8. `output/`: what a build returns ([`BuildResult`], [`ContextMessage`],
//!    [`BuildStats`]) and what the next build reads of it.
//! 9. `adapter/` and `settings/`: provider requests and text made from a
//!    result (the `--explain` breakdown, the HTML page); [`ContextBuilder`], the
//!    settings, with the questions the pipeline asks of them.
//! 10. `pipeline/`: one build as a value that holds what it reads and the
//!     [`BuildCache`] it works in, a method per stage (prepare, plan,
//!     assemble, report), and a session's turn that only appended chunks
//!     extended from its last build.
//! 11. `compaction/`: a compaction planned (the span of whole steps that
//!     fits the summarizer's window, and the request that summarizes it)
//!     and applied (the plan checked against the history, the chunk made).
//! 12. `session/`: [`ContextConfig`], the settings compiled, which makes
//!     each build, and [`ContextSession`], a state, its cache and its last
//!     build over a shared configuration.
//! 13. `engine/`: [`ContextEngine`], a chat of a store built through a
//!     session, each build extending the branch's last one as the store
//!     keeps it.
//! 14. `command/`: the CLI's commands as calls, which the CLI and the
//!     Python package share (behind the `command` feature, not part of the
//!     API). The CLI (`src/bin`) sits on top.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod adapter;
pub mod budget;
#[cfg(feature = "command")]
#[doc(hidden)]
pub mod command;
pub mod compaction;
pub mod content;
mod engine;
mod error;
pub mod format;
pub mod fragment;
mod model;
mod output;
mod pipeline;
pub mod render;
mod session;
mod settings;
pub mod store;
mod syntax;
pub mod tokens;

pub use budget::elision::Elision;
pub use engine::ContextEngine;
pub use error::{ChunkLocation, Error, ErrorKind, JsonPlace, JsonProblem, Result};
pub use model::chunk_id::{ChunkId, ChunkIds};
pub use model::memory::{MemoryChunk, MemoryState};
pub use model::roles::{ChunkKind, Retention, Role};
pub use model::rows::Rows;
pub use output::cache::{BreakCause, CacheBreak, CacheReport};
pub use output::message::ContextMessage;
pub use output::message_text::MessageText;
pub use output::result::{BuildResult, CompactionInEffect, PreviousBuild};
pub use output::stats::BuildStats;
pub use pipeline::BuildCache;
pub use session::ContextSession;
pub use session::config::ContextConfig;
pub use settings::builder::ContextBuilder;
pub use syntax::json_input::{ParseOptions, parse_json};
pub use syntax::json_text::JsonText;
