//! The `chat` verbs: durable chats in a SQLite file or on a PostgreSQL
//! server. Each verb returns the JSON object the command prints.

use std::io::Write;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::model::memory_schema::batch_from_value;
use crate::settings::builder::DEFAULT_MODEL;
use crate::store::{self, MAIN_BRANCH, Store};
use crate::{
    ChunkKind, ContextBuilder, ContextEngine, ErrorKind, MemoryState, ParseOptions, Result, Role,
};

use super::{BuildOptions, Printed, print};

/// How many times [`append`] tries again when another writer saved to the
/// branch between its load and its save.
const APPEND_ATTEMPTS: u32 = 64;

/// The chat a verb acts on: `--db`, `--chat` and `--branch`.
#[derive(Debug, Clone)]
pub struct ChatTarget {
    /// The store: the path of a SQLite file, or a PostgreSQL URL.
    pub db: String,
    /// The chat's id (not empty).
    pub chat: String,
    /// The branch (default: the chat's active branch).
    pub branch: Option<String>,
}

/// `chat append`'s flags besides its target and input.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AppendOptions {
    /// Replace the branch's latest assistant message with the input, which
    /// must be exactly one `agent` chunk with role `assistant`.
    pub replace_last_assistant: bool,
    /// Clear the chat's system lane before applying the input.
    pub clear_system: bool,
    /// The model whose counts are stored with the chunks.
    pub model: String,
}

impl Default for AppendOptions {
    fn default() -> Self {
        AppendOptions {
            replace_last_assistant: false,
            clear_system: false,
            model: DEFAULT_MODEL.to_owned(),
        }
    }
}

impl ChatTarget {
    /// The target of `chat` on `db`, at its active branch.
    pub fn new(db: impl Into<String>, chat: impl Into<String>) -> Self {
        ChatTarget {
            db: db.into(),
            chat: chat.into(),
            branch: None,
        }
    }

    /// The engine on this target, the chat created if missing.
    fn open(&self, store: &Arc<dyn Store>, builder: ContextBuilder) -> Result<ContextEngine> {
        let store = Arc::clone(store);
        match &self.branch {
            Some(branch) => ContextEngine::open_branch(store, &self.chat, branch, builder),
            None => ContextEngine::open(store, &self.chat, builder),
        }
    }

    /// The engine on this target of an existing store and chat.
    pub(super) fn open_existing(&self, builder: ContextBuilder) -> Result<ContextEngine> {
        check_chat_id(&self.chat)?;
        let store = store::open(&self.db, false)?;
        require_chat(&store, &self.chat)?;
        self.open(&store, builder)
    }

    /// This target at the chat's active branch.
    fn active(&self) -> ChatTarget {
        ChatTarget {
            branch: None,
            ..self.clone()
        }
    }
}

/// Where an engine stands: its chat, branch and head.
fn position(engine: &ContextEngine) -> Value {
    json!({"chat": engine.chat(), "branch": engine.branch(), "head": engine.head()})
}

/// `chat append`: `input` appended in one save, tried again from a fresh
/// load when another writer saved first. The store is created if missing,
/// unless the target names a branch other than `main`.
///
/// # Errors
///
/// An input `replace_last_assistant` cannot take, an empty chat id, a
/// store that cannot be opened, chunks the branch refuses (a duplicate
/// id), or a save that keeps conflicting.
pub fn append(target: &ChatTarget, input: &MemoryState, options: &AppendOptions) -> Result<Value> {
    if options.replace_last_assistant {
        check_replacement(input)?;
    }
    check_chat_id(&target.chat)?;
    let other_branch = target.branch.as_deref().is_some_and(|b| b != MAIN_BRANCH);
    let store = store::open(&target.db, !other_branch)?;
    let mut builder = ContextBuilder::new();
    builder.model(&options.model);
    if crate::tokens::model_info(&options.model).is_none() {
        // An append counts its chunks but builds nothing: no budget binds
        // it, so a model of unknown window needs none named.
        builder.max_tokens(usize::MAX);
    }
    let mut attempts = 0;
    loop {
        attempts += 1;
        let mut engine = target.open(&store, builder.clone())?;
        if options.clear_system {
            engine.set_system_prompt(None);
            engine.set_fragments(Vec::new());
            engine.set_context_management(None);
        }
        let appended = apply(&mut engine, input, options.replace_last_assistant)?;
        match engine.save() {
            Ok(()) => {
                let mut out = position(&engine);
                out["appended"] = json!(appended);
                if options.replace_last_assistant {
                    out["replaced"] = json!(appended == 0);
                }
                return Ok(out);
            }
            Err(error) if error.kind().is_conflict() && attempts < APPEND_ATTEMPTS => {}
            Err(error) => return Err(error),
        }
    }
}

/// Refuses an input that is not exactly one assistant message.
fn check_replacement(input: &MemoryState) -> Result<()> {
    let refuse = |message: String| -> Result<()> {
        Err(ErrorKind::Option {
            option: "replace-last-assistant".into(),
            message,
        }
        .into())
    };
    match input.chunks.as_slice() {
        [chunk] if chunk.kind == ChunkKind::Agent && chunk.role == Some(Role::Assistant) => Ok(()),
        [chunk] => refuse(format!(
            "chunk {:?} is no assistant message (an `agent` chunk with role `assistant`), so it \
             cannot replace one",
            chunk.id
        )),
        chunks => refuse(format!(
            "the input must be exactly one assistant chunk to replace the last one, and it has \
             {} chunks",
            chunks.len()
        )),
    }
}

/// Puts the input in the engine as pending changes; returns how many
/// chunks it appends.
fn apply(engine: &mut ContextEngine, input: &MemoryState, replace: bool) -> Result<usize> {
    if input.system_prompt.is_some() {
        engine.set_system_prompt(input.system_prompt.clone());
    }
    if !input.fragments.is_empty() {
        engine.set_fragments(input.fragments.clone());
    }
    if input.context_management.is_some() {
        engine.set_context_management(input.context_management.clone());
    }
    if let (true, Some(chunk)) = (replace, input.chunks.first()) {
        let replaced = engine.replace_last_assistant(chunk.clone())?;
        return Ok(usize::from(!replaced));
    }
    engine.extend(input.chunks.iter().cloned())?;
    Ok(input.chunks.len())
}

/// `chat build`: the branch's prompt, as `build` makes it of its export.
/// Counts the store lacked for these settings are kept for the next
/// process; the build stands if they cannot be written (a warning says so).
///
/// # Errors
///
/// As [`build`](super::build), and a store or chat that does not exist.
pub fn build(target: &ChatTarget, options: &BuildOptions) -> Result<Printed> {
    let builder = options.builder()?;
    let mut engine = target.open_existing(builder)?;
    let mut result = engine.build()?;
    if let Some(previous) = &options.previous {
        result.cache = Some(result.cache_since(previous));
    }
    let kept = engine.keep_counts();
    let mut printed = print(&result, options)?;
    if options.html {
        let state = engine.state()?;
        printed.html = Some(crate::adapter::html::window_page(&result, Some(state)));
    }
    if let Err(error) = kept {
        printed.warnings.push(format!(
            "the counts of this build could not be stored: {error}"
        ));
    }
    Ok(printed)
}

/// `chat export`: the branch as session JSON, written to `out`.
///
/// # Errors
///
/// A store or chat that does not exist, or `out` refusing the bytes.
pub fn export(target: &ChatTarget, out: &mut dyn Write) -> Result<()> {
    let mut engine = target.open_existing(ContextBuilder::new())?;
    engine.export(out)
}

/// `chat rewind`: a new branch holding what came before chunk `to`,
/// switched to.
///
/// # Errors
///
/// A store, chat or chunk that does not exist, or a taken branch name.
pub fn rewind(target: &ChatTarget, to: &str, name: Option<&str>) -> Result<Value> {
    let mut engine = target.open_existing(ContextBuilder::new())?;
    engine.rewind(to, name)?;
    Ok(position(&engine))
}

/// `chat fork`: a branch at the target's head, without switching.
///
/// # Errors
///
/// A store or chat that does not exist, or a taken branch name.
pub fn fork(target: &ChatTarget, name: &str) -> Result<Value> {
    let mut engine = target.open_existing(ContextBuilder::new())?;
    engine.fork(name)?;
    Ok(json!({"chat": engine.chat(), "branch": name, "head": engine.head()}))
}

/// `chat switch`: makes branch `name` the chat's active branch.
///
/// # Errors
///
/// A store, chat or branch that does not exist (a checkpoint's name says
/// how to start a branch there).
pub fn switch(target: &ChatTarget, name: &str) -> Result<Value> {
    let mut engine = target.active().open_existing(ContextBuilder::new())?;
    if let Err(error) = engine.switch_branch(name) {
        refuse_checkpoint_as_branch(&engine, name)?;
        return Err(error);
    }
    Ok(position(&engine))
}

/// `chat checkpoint`: names the target's head; an existing checkpoint is
/// moved only with `force`.
///
/// # Errors
///
/// A store or chat that does not exist, or an existing name without `force`.
pub fn checkpoint(target: &ChatTarget, name: &str, force: bool) -> Result<Value> {
    let mut engine = target.open_existing(ContextBuilder::new())?;
    if !force {
        refuse_existing_checkpoint(&engine, name)?;
    }
    engine.checkpoint(name)?;
    Ok(json!({"chat": engine.chat(), "checkpoint": name, "node": engine.head()}))
}

/// `chat restore`: a new branch at `checkpoint`, switched to.
///
/// # Errors
///
/// A store, chat or checkpoint that does not exist, or a taken name.
pub fn restore(target: &ChatTarget, checkpoint: &str, name: Option<&str>) -> Result<Value> {
    let mut engine = target.active().open_existing(ContextBuilder::new())?;
    engine.restore(checkpoint, name)?;
    Ok(position(&engine))
}

/// `chat branches`: the chat's branches and checkpoints.
///
/// # Errors
///
/// A store or chat that does not exist.
pub fn branches(target: &ChatTarget) -> Result<Value> {
    let chat = &target.chat;
    check_chat_id(chat)?;
    let store = store::open(&target.db, false)?;
    require_chat(&store, chat)?;
    let branches: Vec<Value> = store
        .branches(chat)?
        .into_iter()
        .map(|b| json!({"name": b.name, "head": b.head, "chunks": b.chunks, "active": b.active}))
        .collect();
    let checkpoints: Vec<Value> = store
        .checkpoints(chat)?
        .into_iter()
        .map(|c| json!({"name": c.name, "node": c.node}))
        .collect();
    Ok(json!({"chat": chat, "branches": branches, "checkpoints": checkpoints}))
}

/// `chat list`: the chats of the store at `db`.
///
/// # Errors
///
/// A store that does not exist or cannot be read.
pub fn list(db: &str) -> Result<Value> {
    let store = store::open(db, false)?;
    let chats: Vec<Value> = store
        .chats()?
        .into_iter()
        .map(|c| {
            json!({
                "id": c.id,
                "active_branch": c.active_branch,
                "metadata": c.metadata,
                "created_at_ms": c.created_at_ms,
                "updated_at_ms": c.updated_at_ms,
            })
        })
        .collect();
    Ok(json!({"chats": chats}))
}

/// Refuses an empty chat id before the store is opened, so nothing is
/// created for it.
fn check_chat_id(chat: &str) -> Result<()> {
    if chat.is_empty() {
        return Err(ErrorKind::Chat {
            chat: chat.to_owned(),
            message: "a chat id cannot be empty; give --chat a name".into(),
        }
        .into());
    }
    Ok(())
}

/// Refuses to move checkpoint `name` if it exists.
fn refuse_existing_checkpoint(engine: &ContextEngine, name: &str) -> Result<()> {
    let Some(existing) = engine.checkpoints()?.into_iter().find(|c| c.name == name) else {
        return Ok(());
    };
    let at = existing.node.map_or_else(
        || "an empty branch".to_owned(),
        |node| format!("node {node}"),
    );
    Err(ErrorKind::Chat {
        chat: engine.chat().to_owned(),
        message: format!(
            "a checkpoint named {name:?} exists (at {at}); pass --force to move it to this \
             branch's head, or choose another name"
        ),
    }
    .into())
}

/// The error of `chat switch NAME` where NAME is a checkpoint, not a
/// branch: it says how to start a branch there.
fn refuse_checkpoint_as_branch(engine: &ContextEngine, name: &str) -> Result<()> {
    if engine.checkpoints()?.iter().any(|c| c.name == name) {
        return Err(ErrorKind::Chat {
            chat: engine.chat().to_owned(),
            message: format!(
                "{name:?} is a checkpoint, not a branch; start a branch at it with \
                 `chat restore {name}`"
            ),
        }
        .into());
    }
    Ok(())
}

fn require_chat(store: &Arc<dyn Store>, chat: &str) -> Result<()> {
    if store.chat(chat)?.is_none() {
        return Err(ErrorKind::Chat {
            chat: chat.to_owned(),
            message: "no such chat in the store; list them with `chat list`".into(),
        }
        .into());
    }
    Ok(())
}

/// The input of `chat append`: a session JSON (an object with a field
/// only a session has), one chunk object, or JSON Lines of chunks (one
/// chunk object per line; blank lines skipped), as a session.
///
/// # Errors
///
/// JSON that is none of these; an error in JSON Lines names the line.
pub fn read_chunks(text: &str, options: ParseOptions) -> Result<MemoryState> {
    if text.trim_start_matches('\u{feff}').trim().is_empty() {
        // Refused with the message `build` gives empty input.
        return MemoryState::from_json_str_with(text, options);
    }
    match crate::parse_json(text, options) {
        Ok(Value::Object(object)) if !is_session(&object) => {
            batch_from_value(json!({"chunks": [Value::Object(object)]}))
        }
        Ok(value) => batch_from_value(value),
        Err(whole) => {
            let mut lines = text.lines().filter(|l| !l.trim().is_empty());
            let first_is_chunk = lines.next().is_some_and(|line| {
                matches!(crate::parse_json(line, options), Ok(Value::Object(_)))
            });
            if !first_is_chunk {
                return Err(whole);
            }
            json_lines(text, options)
        }
    }
}

/// The chunks of `value`, a JSON array of chunk objects, checked as a
/// session's chunks but for what a compaction covers, which may be a
/// chunk of the session or branch they are appended to (the append checks
/// it there).
///
/// # Errors
///
/// [`ErrorKind::Chunk`] naming the chunk and field, as a session's.
pub fn chunks_to_append(value: Value) -> Result<Vec<crate::MemoryChunk>> {
    Ok(batch_from_value(json!({ "chunks": value }))?.chunks)
}

/// The chunks of a JSON array of chunk objects (a binding's `extend`),
/// validated as a session's.
///
/// # Errors
///
/// [`ErrorKind::Session`] for anything but an array;
/// [`ErrorKind::Chunk`] as [`chunks_to_append`].
pub fn chunk_array(value: Value) -> Result<Vec<crate::MemoryChunk>> {
    if !value.is_array() {
        return Err(ErrorKind::Session {
            field: "chunks".into(),
            message: "expected a list of chunk objects".into(),
        }
        .into());
    }
    chunks_to_append(value)
}

/// The chunk of one JSON chunk object (a binding's `push`), validated as a
/// session's.
///
/// # Errors
///
/// As [`chunks_to_append`].
pub fn one_chunk(value: Value) -> Result<crate::MemoryChunk> {
    chunks_to_append(json!([value]))?.pop().ok_or_else(|| {
        ErrorKind::Session {
            field: "chunks".into(),
            message: "push takes one chunk".into(),
        }
        .into()
    })
}

/// Whether `object` is a session rather than one chunk: it holds a field
/// only a session has. `{"id": "x"}` and `{}` are chunks missing their
/// `kind`, refused as such, never an empty session appended silently.
fn is_session(object: &serde_json::Map<String, Value>) -> bool {
    !object.contains_key("kind")
        && ["chunks", "system_prompt", "fragments", "context_management"]
            .iter()
            .any(|field| object.contains_key(*field))
}

/// JSON Lines of chunks as a session; an error names the line.
fn json_lines(text: &str, options: ParseOptions) -> Result<MemoryState> {
    let mut chunks = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value = crate::parse_json(line, options).map_err(|error| ErrorKind::Io {
            context: format!("reading JSON Lines, line {}", number + 1),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, error.to_string()),
        })?;
        chunks.push(value);
    }
    batch_from_value(json!({ "chunks": chunks }))
}
