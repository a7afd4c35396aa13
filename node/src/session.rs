//! `Session`: a conversation built turn after turn, at the cost of what
//! is new. Synchronous: the per-turn path of an agent loop.

use agent_context::command::{self, Body, Output, OutputSession};
use agent_context::{MemoryState, parse_json};
use napi_derive::napi;

use crate::builder::{NativeBuilder, with_output};
use crate::compaction::{COMPACTION_KEYS, compaction_options, summary_of};
use crate::errors::{Result, caught, guarded, internal};
use crate::options::{Call, Takes, object_of, parse_options};
use crate::outcome::Outcome;
use crate::rows::RowCache;

/// A session built incrementally with a builder's settings: each build
/// equals `build` of the whole session with those settings and the
/// session's previous build.
#[napi]
pub struct NativeSession {
    session: OutputSession,
    call: Call,
    /// The last report's or messages' rows, as the JavaScript holds them.
    rows: RowCache,
}

/// What the last build did (`ContextSession::stats`).
#[napi(object)]
pub struct Stats {
    pub chunks_rendered: f64,
    pub tokens_counted: f64,
    pub chunks_cached: f64,
    pub chunks_restored: f64,
    pub extended: bool,
    pub replanned: bool,
}

#[napi]
impl NativeSession {
    /// A session with `builder`'s settings over `state` (session JSON),
    /// empty without one.
    #[napi(constructor)]
    pub fn new(
        builder: &NativeBuilder,
        state: Option<String>,
        lossy_unicode: bool,
    ) -> Result<Self> {
        let call = builder.call.clone();
        guarded(|| {
            let state = match state {
                Some(text) => MemoryState::from_json_str_with(&text, parse_options(lossy_unicode))?,
                None => MemoryState::new(),
            };
            let session = OutputSession::new(&call.options, state)?;
            Ok(NativeSession {
                session,
                call,
                rows: RowCache::default(),
            })
        })
    }

    /// Appends one chunk (its JSON), validated as the session JSON's
    /// chunks are; on error the session is unchanged.
    #[napi]
    pub fn push(&mut self, chunk: String, lossy_unicode: bool) -> Result<()> {
        guarded(|| {
            let value = parse_json(&chunk, parse_options(lossy_unicode))?;
            let chunk = command::chat::one_chunk(value)?;
            self.session.session_mut().push(chunk)
        })
    }

    /// Appends chunks (the JSON of an array of them), all or nothing.
    #[napi]
    pub fn extend(&mut self, chunks: String, lossy_unicode: bool) -> Result<()> {
        guarded(|| {
            let value = parse_json(&chunks, parse_options(lossy_unicode))?;
            let chunks = command::chat::chunk_array(value)?;
            self.session.session_mut().extend(chunks)
        })
    }

    /// Builds this turn's prompt in `output` (the builder's by default);
    /// an output that builds otherwise starts the cache afresh.
    #[napi]
    pub fn build(&mut self, output: Option<String>) -> Result<Outcome> {
        caught(|| {
            let options = with_output(&self.call.options, output.as_deref())?;
            let explain = self.call.explain;
            guarded(|| {
                let result = self.session.build(&options)?;
                if options.output == Output::AiSdk {
                    let mut printed = command::print(&result, &options)?;
                    let body = std::mem::replace(&mut printed.body, Body::Text(String::new()));
                    let Body::Json(body) = body else {
                        printed.body = body;
                        return Ok(Outcome::of(printed, explain));
                    };
                    let rows = self.rows.write_messages(body);
                    return Ok(Outcome::of(printed, explain).with_rows(rows));
                }
                if !RowCache::handles(options.output) {
                    let printed = command::print(&result, &options)?;
                    return Ok(Outcome::of(printed, explain));
                }
                // The cache writes these from the build itself; a report's
                // printing (a copy of the build) has their warnings.
                let mut report = options.clone();
                report.output = Output::Report;
                let mut printed = command::print(&result, &report)?;
                // Its body the rows replace: not written at all.
                printed.body = Body::Text(String::new());
                let rows = self.rows.write(&result, options.output);
                Ok(Outcome::of(printed, explain).with_rows(rows))
            })
        })
    }

    /// Plans a compaction of the session's history under the builder's
    /// settings; `options` holds the compaction's options only. The JSON
    /// of the plan, as `Engine.planCompaction` gives it.
    #[napi]
    pub fn plan_compaction(&mut self, options: String) -> Result<String> {
        caught(|| {
            let mut map = object_of(&options, "options")?;
            let compaction = compaction_options(&mut map)?;
            let takes = Takes {
                function: "planCompaction",
                keys: &[],
                also: &COMPACTION_KEYS,
            };
            crate::options::build_options(&Call::default(), &map, &takes)?;
            guarded(|| self.session.plan_compaction(&compaction)).and_then(|plan| to_json(&plan))
        })
    }

    /// Applies a plan's token with `summary` (and `native`, the JSON of the
    /// providers' own items); the JSON of what was applied.
    #[napi]
    pub fn apply_compaction(
        &mut self,
        plan: String,
        summary: String,
        native: Option<String>,
    ) -> Result<String> {
        caught(|| {
            let summary = summary_of(summary, native.as_deref(), &Call::default())?;
            guarded(|| self.session.apply_compaction(&plan, summary))
                .and_then(|applied| to_json(&applied))
        })
    }

    /// The session as JSON: what `build` would take.
    #[napi]
    pub fn state(&self) -> Result<String> {
        caught(|| to_json(self.session.session().state()))
    }

    /// What the last build did.
    #[napi]
    pub fn stats(&self) -> Stats {
        let stats = self.session.session().stats();
        Stats {
            chunks_rendered: stats.chunks_rendered as f64,
            tokens_counted: stats.tokens_counted as f64,
            chunks_cached: stats.chunks_cached as f64,
            chunks_restored: stats.chunks_restored as f64,
            extended: stats.extended,
            replanned: stats.replanned,
        }
    }

    /// The chunks in the session.
    #[napi(getter)]
    pub fn length(&self) -> f64 {
        self.session.session().state().chunks.len() as f64
    }
}

/// `value` as the compact JSON the package parses.
fn to_json(value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(value).map_err(|error| internal(&error.to_string()))
}
