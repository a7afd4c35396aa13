//! `Engine`: a durable chat in a store, driven as `agent-context chat`
//! drives it.

use agent_context::MemoryState;
use agent_context::command::chat::{self, AppendOptions, ChatTarget};
use agent_context::command::chat_compact;
use agent_context::command::{self, DEFAULT_MODEL};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;

use crate::compaction::{APPLY_KEYWORDS, plan_token, summary_of};
use crate::convert::{Shaped, fspath, json_text, optional_text, text_of};
use crate::errors::{detached, input_error};
use crate::options::{
    COMPACTION_KEYWORDS, Call, build_options, compaction_build_options, compaction_options,
    option_error, parse_options, previous_build,
};
use crate::to_python::{json_to_python, to_python};

/// A chat of a store: a SQLite file path (created by the first `append`)
/// or a `postgres://` URL. Each method is the `agent-context chat` verb of
/// the same name on `--db db --chat chat [--branch branch]`, and returns
/// what the verb prints, as a Python value; `build` equals `chat build`.
///
/// `branch=None` follows the chat's active branch, which `rewind`,
/// `restore` and `switch` move. Every call opens the store and saves in
/// one transaction, so engines in other threads or processes may share a
/// chat: a conflicting `append` reloads and tries again.
#[pyclass(module = "agent_context", frozen)]
pub struct Engine {
    target: ChatTarget,
}

#[pymethods]
impl Engine {
    #[new]
    #[pyo3(signature = (db, chat, *, branch = None))]
    fn new(
        db: &Bound<'_, PyAny>,
        chat: &Bound<'_, PyAny>,
        branch: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        // A path object (`pathlib.Path`) names a SQLite file as its str does.
        let db = match fspath(db)? {
            Some(path) => text_of(&path, "db")?,
            None => text_of(db, "db")?,
        };
        let chat = text_of(chat, "chat")?;
        let branch = optional_text(branch, "branch")?;
        if chat.is_empty() {
            return Err(input_error(
                "chat: a chat id cannot be empty; give the chat a name",
            ));
        }
        Ok(Engine {
            target: ChatTarget { db, chat, branch },
        })
    }

    /// The store's location.
    #[getter]
    fn db(&self) -> &str {
        &self.target.db
    }

    /// The chat's id.
    #[getter]
    fn chat(&self) -> &str {
        &self.target.chat
    }

    /// The branch this engine is pinned to (`None`: the active one).
    #[getter]
    fn branch(&self) -> Option<&str> {
        self.target.branch.as_deref()
    }

    /// Appends in one save (`chat append`): a session dict (system prompt,
    /// fragments, chunks), one chunk dict, a list of chunk dicts, or JSON
    /// (or JSON Lines) text of any of these.
    #[pyo3(signature = (input, *, replace_last_assistant = false, clear_system = false, model = None, lossy_unicode = false))]
    fn append(
        &self,
        py: Python<'_>,
        input: &Bound<'_, PyAny>,
        replace_last_assistant: bool,
        clear_system: bool,
        model: Option<&Bound<'_, PyAny>>,
        lossy_unicode: bool,
    ) -> PyResult<Py<PyAny>> {
        let model = optional_text(model, "model")?;
        let text = if input.is_instance_of::<PyList>() {
            let session = PyDict::new(py);
            session.set_item("chunks", input)?;
            json_text(session.as_any(), "input")?
        } else {
            json_text(input, "input")?
        };
        let mut options = AppendOptions::default();
        options.replace_last_assistant = replace_last_assistant;
        options.clear_system = clear_system;
        options.model = model.unwrap_or_else(|| DEFAULT_MODEL.to_owned());
        let value = detached(py, || {
            let input: MemoryState = chat::read_chunks(&text, parse_options(lossy_unicode))?;
            chat::append(&self.target, &input, &options)
        })?;
        to_py(py, &value)
    }

    /// Builds the branch's prompt (`chat build`), with the keywords of
    /// `agent_context.build`. `previous` (`--previous`), the report of an
    /// earlier build of the chat (a dict or its JSON text), adds what a
    /// prompt cache keeps of it to the report (`cache`).
    #[pyo3(signature = (*, previous = None, **kwargs), text_signature = "($self, *, model='gpt-4o', max_tokens=None, reserve=None, escape='structural', framing='openai', content_format='gfm', fragments_format='xml', group_fragments=False, caps=None, low_water=0.8, context_management=None, compact_at=None, exclude_kinds=None, estimate_factor=None, threads=None, output='report', explain=False, cache_control=True, previous=None, max_input_bytes=None, input='session')")]
    fn build(
        &self,
        py: Python<'_>,
        previous: Option<&Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let mut call = build_options(&Call::default(), kwargs, "build")?;
        if call.input != command::InputFormat::Session {
            return Err(option_error(
                "input",
                "a chat builds from its store: append the chunks from_ai_sdk(messages) returns"
                    .into(),
            ));
        }
        call.options.previous = previous_build(py, previous)?;
        let shaped = detached(py, || {
            let printed = chat::build(&self.target, &call.options)?;
            Ok(Shaped::of(printed, call.explain))
        })?;
        shaped.into_py(py)
    }

    /// Plans a compaction of the branch (`chat compact --plan`): the span
    /// to fold and the request that summarizes it, as a dict `{"plan":
    /// TOKEN, "covers", "folded", "remaining", "request",
    /// "request_tokens", "request_tokens_exact", "summary_tokens"}`, or
    /// `{"plan": None, "reason": ...}` when there is nothing to fold. The
    /// chat is unchanged.
    ///
    /// The keywords are the compaction's (`keep_tokens`,
    /// `summarizer_model`, `summarizer_max_tokens`, `summary_tokens`,
    /// `instructions`, and `output`: the request's shape, `"messages"`,
    /// `"openai"` or `"anthropic"`) and the chat's build settings, as
    /// `build` takes them (but `output`, `explain` and `cache_control`):
    /// give `apply_compaction` the same settings.
    #[pyo3(signature = (**kwargs), text_signature = "($self, *, keep_tokens=None, summarizer_model=None, summarizer_max_tokens=None, summary_tokens=None, instructions=None, output='messages', model='gpt-4o', max_tokens=None, reserve=None, escape='structural', framing='openai', content_format='gfm', fragments_format='xml', group_fragments=False, caps=None, low_water=0.8, context_management=None, compact_at=None, exclude_kinds=None, estimate_factor=None, threads=None, max_input_bytes=None)")]
    fn plan_compaction(
        &self,
        py: Python<'_>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let function = "plan_compaction";
        let (compaction, rest) = compaction_options(kwargs)?;
        let call = compaction_build_options(rest.as_ref(), function, &COMPACTION_KEYWORDS)?;
        if let Some(instructions) = &compaction.instructions {
            call.check_size(instructions)?;
        }
        let value = detached(py, || {
            chat_compact::plan(&self.target, &call.options, &compaction)
        })?;
        to_py(py, &value)
    }

    /// Applies a plan of `plan_compaction` (its token, or the dict it
    /// returned) with `summary`, the text the summarizer wrote (`chat
    /// compact --apply`): appends the compaction chunk in one save and
    /// returns `{"chat", "branch", "head", "compaction", "covers",
    /// "tokens_before", "tokens_after"}`. `native` keeps the providers'
    /// own compaction items with it: `{"anthropic": BLOCK, "openai":
    /// ITEM}` (either key), a dict or its JSON.
    ///
    /// The build keywords must be the plan's. A plan that no longer holds
    /// (applied already, rewound away, made under other settings) or a
    /// summary that is empty or not smaller than its span raises
    /// `CompactionError`, and nothing is written.
    #[pyo3(signature = (plan, summary, *, native = None, **kwargs), text_signature = "($self, plan, summary, *, native=None, model='gpt-4o', max_tokens=None, reserve=None, escape='structural', framing='openai', content_format='gfm', fragments_format='xml', group_fragments=False, caps=None, low_water=0.8, context_management=None, compact_at=None, exclude_kinds=None, estimate_factor=None, threads=None, max_input_bytes=None)")]
    fn apply_compaction(
        &self,
        py: Python<'_>,
        plan: &Bound<'_, PyAny>,
        summary: &Bound<'_, PyAny>,
        native: Option<&Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let call = compaction_build_options(kwargs, "apply_compaction", &APPLY_KEYWORDS)?;
        let plan = plan_token(plan)?;
        let summary = summary_of(summary, native, &call)?;
        let value = detached(py, || {
            chat_compact::apply(&self.target, &call.options, &plan, summary)
        })?;
        to_py(py, &value)
    }

    /// The branch as session JSON (`chat export`), a dict.
    fn export(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let text = detached(py, || {
            let mut out = Vec::new();
            chat::export(&self.target, &mut out)?;
            Ok(String::from_utf8_lossy(&out).into_owned())
        })?;
        Ok(json_to_python(py, &text)?.unbind())
    }

    /// Names the branch's head (`chat checkpoint`); an existing checkpoint
    /// moves only with `force`.
    #[pyo3(signature = (name, *, force = false))]
    fn checkpoint(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        force: bool,
    ) -> PyResult<Py<PyAny>> {
        let name = text_of(name, "name")?;
        let value = detached(py, || chat::checkpoint(&self.target, &name, force))?;
        to_py(py, &value)
    }

    /// Starts a branch at `checkpoint` and switches to it (`chat restore`).
    #[pyo3(signature = (checkpoint, *, name = None))]
    fn restore(
        &self,
        py: Python<'_>,
        checkpoint: &Bound<'_, PyAny>,
        name: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let checkpoint = text_of(checkpoint, "checkpoint")?;
        let name = optional_text(name, "name")?;
        let value = detached(py, || {
            chat::restore(&self.target, &checkpoint, name.as_deref())
        })?;
        to_py(py, &value)
    }

    /// Creates branch `name` at the branch's head, without switching
    /// (`chat fork`).
    fn fork(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let name = text_of(name, "name")?;
        let value = detached(py, || chat::fork(&self.target, &name))?;
        to_py(py, &value)
    }

    /// Starts a branch holding what came before chunk `to`, and switches to
    /// it (`chat rewind`); `name` defaults to the branch's with `-vN`.
    #[pyo3(signature = (*, to, name = None))]
    fn rewind(
        &self,
        py: Python<'_>,
        to: &Bound<'_, PyAny>,
        name: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let to = text_of(to, "to")?;
        let name = optional_text(name, "name")?;
        let value = detached(py, || chat::rewind(&self.target, &to, name.as_deref()))?;
        to_py(py, &value)
    }

    /// Makes branch `name` the chat's active branch (`chat switch`).
    fn switch(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let name = text_of(name, "name")?;
        let value = detached(py, || chat::switch(&self.target, &name))?;
        to_py(py, &value)
    }

    /// The chat's branches and checkpoints (`chat branches`).
    fn branches(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let value = detached(py, || chat::branches(&self.target))?;
        to_py(py, &value)
    }

    /// The chats of the store (`chat list`).
    fn chats(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let value = detached(py, || chat::list(&self.target.db))?;
        to_py(py, &value)
    }

    fn __repr__(&self) -> String {
        format!(
            "Engine({:?}, chat={:?}, branch={:?})",
            self.target.db, self.target.chat, self.target.branch
        )
    }
}

fn to_py(py: Python<'_>, value: &Value) -> PyResult<Py<PyAny>> {
    Ok(to_python(py, value)?.unbind())
}
