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
//! * [`adapter`]: OpenAI, Anthropic and plain-text output.
//! * [`Fragment`](fragment::Fragment) and [`format`](mod@format): structured system context (role, hints,
//!   terms, guardrails, config) rendered as XML, Markdown, TOML or TOON.
//!
//! # Layers
//!
//! Each module imports only from the layers below it; `tests/it/layers.rs`
//! fails if any module reaches back up. Bottom up:
//!
//! 1. leaves, importing nothing above them: ids (`chunk_id`), `roles`,
//!    `error`, JSON input (`json_scan`, `json_input`, `json_number`,
//!    `json_text`), the fragment tree (`fragment`), semantic [`content`]
//!    and its renderers, the `context_management` request types,
//!    the string impls ids and texts share (`str_like`), and the report's
//!    shared lists and texts ([`Rows`], [`MessageText`]);
//! 2. the model: `memory`, and `memory_schema`, which reads it from JSON;
//!    and the [`store`] of durable chats, which keeps chunks as JSON;
//! 3. [`tokens`], [`render`] (escaping included), [`format`](mod@format);
//! 4. the plan: [`budget`] (policy, units, decisions);
//! 5. what a build returns (`message`, `build_result`) and carries over to
//!    the next (`last_build`); the settings, [`ContextBuilder`] (`builder`:
//!    its fields and setters, and the few questions the pipeline asks of
//!    them: which chunks it selects, which counter it counts with);
//! 6. the pipeline, `build`: one build as a struct that holds what it
//!    reads and the [`BuildCache`] it works in, with a method per stage
//!    (prepare, plan, assemble, report), and a session's turn that only
//!    appended chunks extended from its last build (`extend`, `replan`);
//! 7. [`ContextConfig`] (`config`): the settings compiled, immutable and
//!    shared, which makes each build; [`ContextSession`] (`session`: a
//!    state, its cache and its last build over a shared configuration),
//!    then [`ContextEngine`] (`engine`: a chat of a store, built through a
//!    session);
//! 8. [`adapter`] and `explain`, then `command`, the CLI's commands as
//!    calls, which the CLI and the Python package share (behind the
//!    `command` feature, not part of the API); the CLI (`src/bin`) sits on
//!    top.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod adapter;
pub mod budget;
#[cfg(feature = "command")]
#[doc(hidden)]
pub mod command;
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
pub use output::message::ContextMessage;
pub use output::message_text::MessageText;
pub use output::result::BuildResult;
pub use output::stats::BuildStats;
pub use pipeline::BuildCache;
pub use session::ContextSession;
pub use session::config::ContextConfig;
pub use settings::builder::ContextBuilder;
pub use syntax::json_input::{ParseOptions, parse_json};
pub use syntax::json_text::JsonText;
