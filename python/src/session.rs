//! `Session`: a conversation built turn after turn, at the cost of what
//! is new.

use std::sync::{Mutex, MutexGuard};

use agent_context::command::{self, Output, OutputSession};
use agent_context::{ErrorKind, MemoryState, parse_json};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::builder::{ContextBuilder, with_output};
use crate::compaction::{plan_token, summary_of};
use crate::convert::{Shaped, json_text, optional_text};
use crate::errors::{detached, to_py};
use crate::options::{
    COMPACTION_KEYWORDS, Call, compaction_options, no_more_keywords, parse_options,
};
use crate::rows::RowCache;
use crate::to_python::to_python;

/// A session built incrementally: `push` or `extend` chunks (dicts as in
/// the session JSON, or JSON strings), then `build()` once per turn. A
/// turn renders and counts only the new chunks; each build equals
/// `agent_context.build` of the whole session with the builder's settings
/// and the session's previous build (which keeps the trimmed prefix
/// stable between trims).
///
/// Safe to share between threads: calls on one session take turns (a
/// lock), without holding the GIL while they build.
#[pyclass(module = "agent_context")]
pub struct Session {
    inner: Mutex<Inner>,
    /// The last report's rows as Python values; only touched with the GIL
    /// held, and skipped when another thread is using it.
    rows: Mutex<RowCache>,
}

struct Inner {
    session: OutputSession,
    call: Call,
}

#[pymethods]
impl Session {
    /// A session with `builder`'s settings over `state` (a session dict or
    /// JSON string: system prompt, fragments, chunks so far), empty by
    /// default.
    #[new]
    #[pyo3(signature = (builder = None, state = None, *, lossy_unicode = false))]
    fn new(
        py: Python<'_>,
        builder: Option<PyRef<'_, ContextBuilder>>,
        state: Option<&Bound<'_, PyAny>>,
        lossy_unicode: bool,
    ) -> PyResult<Self> {
        let call = builder.map_or_else(Call::default, |b| b.call.clone());
        let text = state
            .filter(|s| !s.is_none())
            .map(|s| json_text(s, "state"))
            .transpose()?;
        let inner = detached(py, || {
            let state = match text {
                Some(text) => MemoryState::from_json_str_with(&text, parse_options(lossy_unicode))?,
                None => MemoryState::new(),
            };
            let session = OutputSession::new(&call.options, state)?;
            Ok(Inner { session, call })
        })?;
        Ok(Session {
            inner: Mutex::new(inner),
            rows: Mutex::new(RowCache::default()),
        })
    }

    /// Appends one chunk (a dict, or its JSON), validated as the session
    /// JSON's chunks are; on error the session is unchanged.
    #[pyo3(signature = (chunk, *, lossy_unicode = false))]
    fn push(&self, py: Python<'_>, chunk: &Bound<'_, PyAny>, lossy_unicode: bool) -> PyResult<()> {
        let text = json_text(chunk, "chunk")?;
        detached(py, || {
            let value = parse_json(&text, parse_options(lossy_unicode))?;
            let chunk = command::chat::one_chunk(value)?;
            self.lock()?.session.session_mut().push(chunk)
        })
    }

    /// Appends chunks (a list of dicts, or its JSON), all or nothing.
    #[pyo3(signature = (chunks, *, lossy_unicode = false))]
    fn extend(
        &self,
        py: Python<'_>,
        chunks: &Bound<'_, PyAny>,
        lossy_unicode: bool,
    ) -> PyResult<()> {
        let text = json_text(chunks, "chunks")?;
        detached(py, || {
            let value = parse_json(&text, parse_options(lossy_unicode))?;
            let chunks = command::chat::chunk_array(value)?;
            self.lock()?.session.session_mut().extend(chunks)
        })
    }

    /// Builds this turn's prompt and returns it as `agent_context.build`
    /// does (`output` overrides the builder's; one that builds otherwise,
    /// such as `anthropic` after `report`, starts the cache afresh). Every
    /// report after the first has `cache`: what a prompt cache keeps of the
    /// session's previous build, as `build(..., previous=report)` says.
    #[pyo3(signature = (*, output = None))]
    fn build(&self, py: Python<'_>, output: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let output = optional_text(output, "output")?;
        let output = output.as_deref();
        let shaped = detached(py, || {
            let mut inner = self.lock()?;
            let options = match output {
                Some(_) => {
                    with_output(&inner.call.options, output).map_err(|_| unknown_output(output))?
                }
                None => inner.call.options.clone(),
            };
            let result = inner.session.build(&options)?;
            let explain = inner.call.explain;
            if RowCache::handles(options.output) {
                // The cache shapes these from the build itself; a report's
                // printing (a copy of the build) has their warnings.
                let mut report = options.clone();
                report.output = Output::Report;
                let printed = command::print(&result, &report)?;
                return Ok(Shaped::with_result(printed, options.output, explain));
            }
            command::print(&result, &options).map(|printed| Shaped::of(printed, explain))
        })?;
        // Never waits for the cache (its holder may need the GIL this
        // thread holds): a busy cache converts the whole report.
        match self.rows.try_lock() {
            Ok(mut rows) => shaped.into_py_with(py, Some(&mut rows)),
            Err(_) => shaped.into_py(py),
        }
    }

    /// Plans a compaction of the session's history: the span to fold and
    /// the request that summarizes it, as `Engine.plan_compaction`
    /// returns them (`{"plan": None, "reason": ...}` when there is nothing
    /// to fold). The keywords are the compaction's: `keep_tokens`,
    /// `summarizer_model`, `summarizer_max_tokens`, `summary_tokens`,
    /// `instructions`, and `output` (the request's shape: `"messages"`,
    /// `"openai"` or `"anthropic"`); the settings are the builder's. The
    /// session is unchanged.
    #[pyo3(signature = (**kwargs), text_signature = "($self, *, keep_tokens=None, summarizer_model=None, summarizer_max_tokens=None, summary_tokens=None, instructions=None, output='messages')")]
    fn plan_compaction(
        &self,
        py: Python<'_>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let (compaction, rest) = compaction_options(kwargs)?;
        no_more_keywords(rest, "plan_compaction", &COMPACTION_KEYWORDS)?;
        let value = detached(py, || {
            let mut inner = self.lock()?;
            let plan = inner.session.plan_compaction(&compaction)?;
            Ok(serde_json::to_value(plan).unwrap_or_default())
        })?;
        Ok(to_python(py, &value)?.unbind())
    }

    /// Applies a plan of `plan_compaction` (its token, or the dict it
    /// returned) with `summary`, the summarizer's text: appends the
    /// compaction chunk, whose summary stands for its span in every later
    /// build, and returns `{"compaction", "covers", "tokens_before",
    /// "tokens_after"}` (no `chat`, `branch` or `head`: a session has
    /// none). `native` keeps the providers' own items: `{"anthropic":
    /// BLOCK, "openai": ITEM}`. A plan that no longer holds or a summary that is empty or
    /// not smaller than its span raises `CompactionError`, and the session
    /// is unchanged.
    #[pyo3(signature = (plan, summary, *, native = None))]
    fn apply_compaction(
        &self,
        py: Python<'_>,
        plan: &Bound<'_, PyAny>,
        summary: &Bound<'_, PyAny>,
        native: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let plan = plan_token(plan)?;
        let summary = summary_of(summary, native, &Call::default())?;
        let value = detached(py, || {
            let mut inner = self.lock()?;
            let applied = inner.session.apply_compaction(&plan, summary)?;
            Ok(serde_json::to_value(applied).unwrap_or_default())
        })?;
        Ok(to_python(py, &value)?.unbind())
    }

    /// The session as JSON (a dict): what `agent_context.build` would take.
    fn state(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        // A copy, converted once the lock is let go: converting runs Python,
        // which may switch to a thread waiting for the lock with the GIL.
        let state = detached(py, || Ok(self.lock()?.session.session().state().clone()))?;
        Ok(to_python(py, &state)?.unbind())
    }

    /// What the last build did: chunks rendered and cached, tokens
    /// counted, and whether it extended (or planned again) the build before.
    fn stats(&self, py: Python<'_>) -> PyResult<Py<PyDict>> {
        let stats = self.lock().map_err(to_py)?.session.session().stats();
        let dict = PyDict::new(py);
        dict.set_item("chunks_rendered", stats.chunks_rendered)?;
        dict.set_item("tokens_counted", stats.tokens_counted)?;
        dict.set_item("chunks_cached", stats.chunks_cached)?;
        dict.set_item("chunks_restored", stats.chunks_restored)?;
        dict.set_item("extended", stats.extended)?;
        dict.set_item("replanned", stats.replanned)?;
        Ok(dict.unbind())
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(self
            .lock()
            .map_err(to_py)?
            .session
            .session()
            .state()
            .chunks
            .len())
    }
}

impl Session {
    fn lock(&self) -> agent_context::Result<MutexGuard<'_, Inner>> {
        self.inner.lock().map_err(|_| {
            ErrorKind::Option {
                option: "session".into(),
                message:
                    "this session stopped at an internal error and cannot be used; make a new one"
                        .into(),
            }
            .into()
        })
    }
}

fn unknown_output(output: Option<&str>) -> agent_context::Error {
    let message = command::Output::from_name(output.unwrap_or_default())
        .err()
        .unwrap_or_default();
    ErrorKind::Option {
        option: "output".into(),
        message,
    }
    .into()
}
