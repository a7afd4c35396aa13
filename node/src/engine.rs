//! `Engine`: a durable chat in a store, driven as `agent-context chat`
//! drives it. Each verb runs on the libuv thread pool (a Promise);
//! `append` and `build`, the per-turn path, also run in place.

use agent_context::command::chat::{self, AppendOptions, ChatTarget};
use agent_context::command::chat_compact;
use agent_context::command::{self, DEFAULT_MODEL};
use napi::bindgen_prelude::AsyncTask;
use napi_derive::napi;
use serde_json::Value;

use crate::compaction::{COMPACTION_KEYS, compaction_options, summary_of};
use crate::errors::{Result, caught, guarded, input_error, option_error};
use crate::options::{
    BUILD_KEYS, Call, Takes, build_options, compaction_build_keys, object_of, parse_options,
    previous_build,
};
use crate::outcome::Outcome;
use crate::task::{Job, spawn};
use crate::values::{flag, optional_text};

/// A chat of a store (a SQLite file path or a `postgres://` URL), at a
/// branch or the chat's active one. Holds no connection: each verb opens
/// the store and saves in one transaction, as the CLI does.
#[napi]
pub struct NativeEngine {
    target: ChatTarget,
}

#[napi]
impl NativeEngine {
    #[napi(constructor)]
    pub fn new(db: String, chat: String, branch: Option<String>) -> Result<Self> {
        if chat.is_empty() {
            return Err(input_error(
                "chat: a chat id cannot be empty; give the chat a name",
            ));
        }
        Ok(NativeEngine {
            target: ChatTarget { db, chat, branch },
        })
    }

    /// `chat append` of `input` (session JSON, one chunk, or JSON Lines);
    /// `options` is `{replaceLastAssistant, clearSystem, model, lossyUnicode}`.
    #[napi]
    pub fn append(&self, input: String, options: String) -> AsyncTask<Job> {
        let target = self.target.clone();
        spawn(move || append(&target, &input, &options))
    }

    /// [`append`](Self::append) in place.
    #[napi]
    pub fn append_sync(&self, input: String, options: String) -> Result<Outcome> {
        caught(|| append(&self.target, &input, &options))
    }

    /// `chat build` with the build options of `options`, and `previous`
    /// (a report's JSON text).
    #[napi]
    pub fn build(&self, options: String, previous: Option<String>) -> AsyncTask<Job> {
        let target = self.target.clone();
        spawn(move || build(&target, &options, previous.as_deref()))
    }

    /// [`build`](Self::build) in place.
    #[napi]
    pub fn build_sync(&self, options: String, previous: Option<String>) -> Result<Outcome> {
        caught(|| build(&self.target, &options, previous.as_deref()))
    }

    /// `chat compact --plan`: `options` holds the compaction's options and
    /// the chat's build settings.
    #[napi]
    pub fn plan_compaction(&self, options: String) -> AsyncTask<Job> {
        let target = self.target.clone();
        spawn(move || plan_compaction(&target, &options))
    }

    /// `chat compact --apply` of the plan's token with `summary` (and
    /// `native`, the providers' items as JSON), under the build settings
    /// of `options`, which must be the plan's.
    #[napi]
    pub fn apply_compaction(
        &self,
        plan: String,
        summary: String,
        native: Option<String>,
        options: String,
    ) -> AsyncTask<Job> {
        let target = self.target.clone();
        spawn(move || {
            let takes = Takes {
                function: "applyCompaction",
                keys: &compaction_build_keys(),
                also: &["native"],
            };
            let call = build_options(&Call::default(), &object_of(&options, "options")?, &takes)?;
            let summary = summary_of(summary, native.as_deref(), &call)?;
            guarded(|| chat_compact::apply(&target, &call.options, &plan, summary))
                .map(|value| Outcome::value(&value))
        })
    }

    /// `chat export`: the branch as session JSON.
    #[napi]
    pub fn export(&self) -> AsyncTask<Job> {
        let target = self.target.clone();
        spawn(move || {
            guarded(|| {
                let mut out = Vec::new();
                chat::export(&target, &mut out)?;
                Ok(Outcome::json(String::from_utf8_lossy(&out).into_owned()))
            })
        })
    }

    /// `chat checkpoint NAME [--force]`.
    #[napi]
    pub fn checkpoint(&self, name: String, force: bool) -> AsyncTask<Job> {
        self.verb(move |target| chat::checkpoint(target, &name, force))
    }

    /// `chat restore CHECKPOINT [--name NAME]`.
    #[napi]
    pub fn restore(&self, checkpoint: String, name: Option<String>) -> AsyncTask<Job> {
        self.verb(move |target| chat::restore(target, &checkpoint, name.as_deref()))
    }

    /// `chat fork --name NAME`.
    #[napi]
    pub fn fork(&self, name: String) -> AsyncTask<Job> {
        self.verb(move |target| chat::fork(target, &name))
    }

    /// `chat rewind --to CHUNK [--name NAME]`.
    #[napi]
    pub fn rewind(&self, to: String, name: Option<String>) -> AsyncTask<Job> {
        self.verb(move |target| chat::rewind(target, &to, name.as_deref()))
    }

    /// `chat switch NAME`.
    #[napi]
    pub fn switch(&self, name: String) -> AsyncTask<Job> {
        self.verb(move |target| chat::switch(target, &name))
    }

    /// `chat branches`.
    #[napi]
    pub fn branches(&self) -> AsyncTask<Job> {
        self.verb(chat::branches)
    }

    /// `chat list`.
    #[napi]
    pub fn chats(&self) -> AsyncTask<Job> {
        self.verb(|target| chat::list(&target.db))
    }
}

impl NativeEngine {
    /// A verb that prints one JSON object, on the pool.
    fn verb(
        &self,
        verb: impl FnOnce(&ChatTarget) -> agent_context::Result<Value> + Send + 'static,
    ) -> AsyncTask<Job> {
        let target = self.target.clone();
        spawn(move || guarded(|| verb(&target)).map(|value| Outcome::value(&value)))
    }
}

/// The options of `chat append` besides its input.
const APPEND_KEYS: [&str; 4] = [
    "replaceLastAssistant",
    "clearSystem",
    "model",
    "lossyUnicode",
];

fn append(target: &ChatTarget, input: &str, options: &str) -> Result<Outcome> {
    let map = object_of(options, "options")?;
    let mut append = AppendOptions::default();
    let mut lossy = false;
    for (key, value) in &map {
        match key.as_str() {
            _ if value.is_null() => {}
            "replaceLastAssistant" => append.replace_last_assistant = flag(value, key)?,
            "clearSystem" => append.clear_system = flag(value, key)?,
            "lossyUnicode" => lossy = flag(value, key)?,
            "model" => {
                append.model =
                    optional_text(Some(value), key)?.unwrap_or_else(|| DEFAULT_MODEL.to_owned());
            }
            _ => {
                return Err(input_error(format!(
                    "append(): unknown option {key:?}; the options are: {}",
                    APPEND_KEYS.join(", ")
                )));
            }
        }
    }
    guarded(|| {
        let input = chat::read_chunks(input, parse_options(lossy))?;
        chat::append(target, &input, &append)
    })
    .map(|value| Outcome::value(&value))
}

/// The options the package's JavaScript reads itself, besides a build's.
const BUILD_ALSO: [&str; 3] = ["previous", "onWarning", "onExplain"];

fn build(target: &ChatTarget, options: &str, previous: Option<&str>) -> Result<Outcome> {
    let takes = Takes {
        function: "build",
        keys: &BUILD_KEYS,
        also: &BUILD_ALSO,
    };
    let mut call = build_options(&Call::default(), &object_of(options, "options")?, &takes)?;
    if call.input != command::InputFormat::Session {
        return Err(option_error(
            "input",
            "a chat builds from its store: append the chunks fromAiSdk(messages) returns",
        ));
    }
    call.options.previous = previous_build(previous)?;
    guarded(|| {
        let printed = chat::build(target, &call.options)?;
        Ok(Outcome::of(printed, call.explain))
    })
}

fn plan_compaction(target: &ChatTarget, options: &str) -> Result<Outcome> {
    let mut map = object_of(options, "options")?;
    let compaction = compaction_options(&mut map)?;
    let takes = Takes {
        function: "planCompaction",
        keys: &compaction_build_keys(),
        also: &COMPACTION_KEYS,
    };
    let call = build_options(&Call::default(), &map, &takes)?;
    if let Some(instructions) = &compaction.instructions {
        call.check_size(instructions)?;
    }
    guarded(|| chat_compact::plan(target, &call.options, &compaction))
        .map(|value| Outcome::value(&value))
}
