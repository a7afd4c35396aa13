//! `agent_context` for Python: the CLI's JSON in, the CLI's JSON out.
//!
//! Every call goes through `agent_context::command`, the library layer the
//! `agent-context` binary itself calls, so `agent_context.build(session,
//! **flags)` gives exactly what `agent-context build --flags` prints, as a
//! Python value. Work runs without the GIL; panics become `Error`.

use agent_context::command::{self, CountOptions};
use pyo3::prelude::*;
use pyo3::types::PyDict;

mod builder;
mod compaction;
mod convert;
mod engine;
mod errors;
mod options;
mod rows;
mod session;
mod struct_names;
mod to_json;
mod to_python;

use convert::{Shaped, json_text};
use errors::detached;
use options::{Call, build_options, option_error, parse_options, previous_build};

/// Builds the prompt of `session` within the budget, as `agent-context
/// build` does with the same flags, and returns its output: a dict for
/// JSON outputs (`report`, the default; `openai`, `anthropic`,
/// `openai-native`, `openai-responses`, `anthropic-native`), a str for
/// `text`.
///
/// `session` is a dict or a JSON string. The keywords are the CLI's
/// flags, with the same defaults: `model`, `max_tokens`, `reserve`,
/// `escape`, `framing`, `content_format`, `fragments_format`,
/// `group_fragments`, `caps`,
/// `low_water`, `context_management`, `compact_at` (an int of tokens or a
/// float fraction of the budget: the report's `compaction_due`),
/// `exclude_kinds`, `estimate_factor`,
/// `threads`, `output`, `explain` (the breakdown on `sys.stderr`),
/// `cache_control` (or `no_cache_control`), `previous`, `max_input_bytes`
/// and `lossy_unicode`.
///
/// `previous` (`--previous`) is the report of the previous build of the
/// same session, as a dict (what `build` returns with output `report`) or
/// its JSON text: the build keeps its cut while it fits, and the report
/// says what a prompt cache keeps of it (`cache`).
#[pyfunction]
#[pyo3(
    signature = (session, *, lossy_unicode = false, previous = None, **kwargs),
    text_signature = "(session, *, model='gpt-4o', max_tokens=None, reserve=None, escape='structural', framing='openai', content_format='gfm', fragments_format='xml', group_fragments=False, caps=None, low_water=0.8, context_management=None, compact_at=None, exclude_kinds=None, estimate_factor=None, threads=None, output='report', explain=False, cache_control=True, previous=None, max_input_bytes=None, input='session', lossy_unicode=False)"
)]
fn build(
    py: Python<'_>,
    session: &Bound<'_, PyAny>,
    lossy_unicode: bool,
    previous: Option<&Bound<'_, PyAny>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let mut call = build_options(&Call::default(), kwargs, "build")?;
    call.options.previous = previous_build(py, previous)?;
    let text = json_text(session, "session")?;
    call.check_size(&text)?;
    let (shaped, read) = detached(py, || {
        let (state, read) = command::read_session(&text, call.input, parse_options(lossy_unicode))?;
        let printed = command::build(&state, &call.options)?;
        Ok((Shaped::of(printed, call.explain), read))
    })?;
    // The reading's warnings first, as the CLI writes them.
    errors::warn(py, &read)?;
    shaped.into_py(py)
}

/// The session of the AI SDK's messages (a list of `UIMessage` or
/// `ModelMessage` dicts, `{"system", "messages"}`, or its JSON), as
/// `agent-context build --input ai-sdk` reads them: a session dict
/// (`system_prompt`, `chunks`). Parts no chunk holds (images, files,
/// sources) are left out with one `ContextWarning`.
///
/// `start` is the place of the first message in the whole history: chunk
/// ids follow it (`m{start}.0`), so each turn's new messages append to a
/// `Session` or an `Engine` without meeting the ids of earlier ones.
#[pyfunction]
#[pyo3(signature = (messages, *, start = 0, lossy_unicode = false))]
fn from_ai_sdk(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    start: usize,
    lossy_unicode: bool,
) -> PyResult<Py<PyAny>> {
    let text = json_text(messages, "messages")?;
    let history = detached(py, || {
        command::read_ai_sdk(&text, start, parse_options(lossy_unicode))
    })?;
    errors::warn(py, &history.warnings)?;
    Ok(to_python::to_python(py, &history.state)?.unbind())
}

/// The tokens of `text` for `model`, exactly as `agent-context count`
/// prints them (an estimate for models without a public tokenizer, with a
/// `ContextWarning`).
#[pyfunction]
#[pyo3(signature = (text, *, model = None, estimate_factor = None))]
fn count(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    model: Option<&Bound<'_, PyAny>>,
    estimate_factor: Option<&Bound<'_, PyAny>>,
) -> PyResult<usize> {
    let mut options = CountOptions::default();
    if let Some(model) = convert::optional_text(model, "model")? {
        options.model = model;
    }
    if let Some(factor) = estimate_factor.filter(|f| !f.is_none()) {
        let factor = convert::text_of(factor.str()?.as_any(), "estimate_factor")?;
        options.estimate_factor = Some(
            command::parse_estimate_factor(&factor)
                .map_err(|m| option_error("estimate_factor", m))?,
        );
    }
    let text = convert::text_of(text, "text")?;
    let (tokens, printed) = detached(py, || command::count(&text, &options))?;
    errors::warn(py, &printed.warnings)?;
    Ok(tokens)
}

/// The names `from agent_context import *` gives.
const PUBLIC: [&str; 14] = [
    "build",
    "count",
    "from_ai_sdk",
    "ContextBuilder",
    "Session",
    "Engine",
    "Error",
    "InputError",
    "CompactionError",
    "BudgetExceeded",
    "StoreError",
    "ChatError",
    "ContextWarning",
    "OUTPUTS",
];

/// An LLM agent's typed memory in, the prompt within a token budget out,
/// with exact tokenizer counts: the `agent-context` CLI's JSON as Python
/// values. `build` is `agent-context build`, `count` is `agent-context
/// count`, `Engine` the `chat` verbs; keywords are the CLI's flags.
#[pymodule(name = "agent_context")]
fn agent_context_module(module: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(module)?;
    module.add_function(wrap_pyfunction!(build, module)?)?;
    module.add_function(wrap_pyfunction!(count, module)?)?;
    module.add_function(wrap_pyfunction!(from_ai_sdk, module)?)?;
    module.add_class::<builder::ContextBuilder>()?;
    module.add_class::<session::Session>()?;
    module.add_class::<engine::Engine>()?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add("__all__", PUBLIC.to_vec())?;
    module.add("OUTPUTS", command::Output::ALL.map(|o| o.as_str()).to_vec())?;
    Ok(())
}
