//! `agent-context chat …`: durable chats in a SQLite file or on a
//! PostgreSQL server, from the shell.
//! Every verb prints one JSON object on stdout.

use std::sync::Arc;

use agent_context::store::{self, MAIN_BRANCH, Store};
use agent_context::{
    ChunkKind, ContextBuilder, ContextEngine, DEFAULT_MODEL, ErrorKind, MemoryState, Result, Role,
};
use clap::Subcommand;
use serde_json::{Value, json};

use crate::input::{Expected, JsonInput, read_input};
use crate::options::BuildOptions;
use crate::{OutputArgs, pretty};

/// How many times `chat append` tries again when another writer saved to
/// the branch between its load and its save.
const APPEND_ATTEMPTS: u32 = 64;

#[derive(Subcommand)]
pub(crate) enum ChatCommand {
    /// Append chunks (a session JSON, or JSON Lines of chunks) in one save.
    #[command(mut_arg("db", |db| db.help(APPEND_DB_HELP)))]
    Append(AppendArgs),
    /// Build a branch's prompt, as `build` does on its export.
    Build(ChatBuildArgs),
    /// Print a branch as session JSON.
    Export(Target),
    /// Start a new branch before a chunk, and switch to it.
    Rewind(RewindArgs),
    /// Create a branch at a branch's head, without switching.
    Fork(ForkArgs),
    /// Make a branch the chat's active branch (a checkpoint is not a
    /// branch: `chat restore` starts one at it).
    Switch(SwitchArgs),
    /// Name a branch's head as a checkpoint; an existing checkpoint is moved
    /// only with --force.
    Checkpoint(CheckpointArgs),
    /// Start a new branch at a checkpoint, and switch to it.
    Restore(RestoreArgs),
    /// List a chat's branches and checkpoints.
    Branches(ChatArgs),
    /// List the chats of a store.
    List(StoreArgs),
}

#[derive(clap::Args)]
pub(crate) struct StoreArgs {
    /// The store: the path of a SQLite file, or a PostgreSQL URL
    /// (postgres://user@host/db[?schema=name], with the `postgres`
    /// feature). It must exist: only `chat append` creates one.
    #[arg(long, value_name = "PATH|URL", default_value = "agent-context.db")]
    db: String,
}

/// `--db` of `chat append`, the one verb that creates a store.
const APPEND_DB_HELP: &str = "The store: the path of a SQLite file, or a PostgreSQL URL \
    (postgres://user@host/db[?schema=name], with the `postgres` feature); created if missing, \
    unless --branch names a branch other than main. An empty path, or one naming a directory, a device or a FIFO, is refused and nothing is \
    created";

#[derive(clap::Args)]
pub(crate) struct ChatArgs {
    #[command(flatten)]
    store: StoreArgs,
    /// The chat's id (not empty).
    #[arg(long, value_name = "ID")]
    chat: String,
}

#[derive(clap::Args)]
pub(crate) struct Target {
    #[command(flatten)]
    chat: ChatArgs,
    /// The branch (default: the chat's active branch).
    #[arg(long, value_name = "NAME")]
    branch: Option<String>,
}

#[derive(clap::Args)]
pub(crate) struct AppendArgs {
    #[command(flatten)]
    target: Target,
    /// Replace the branch's latest assistant message with the input, which
    /// must be exactly one `agent` chunk with role `assistant`.
    #[arg(long)]
    replace_last_assistant: bool,
    /// Clear the chat's system prompt, fragments and `context_management`
    /// (the system lane) before applying the input; with a `system_prompt`,
    /// `fragments` or `context_management` in the input, those replace them.
    #[arg(long)]
    clear_system: bool,
    /// The model whose counts are stored with the chunks (a build for
    /// another encoding counts them when it first needs them).
    #[arg(long, default_value = DEFAULT_MODEL)]
    model: String,
    /// Session JSON or JSON Lines file, or `-` (the default) for standard input.
    #[arg(default_value = "-")]
    file: String,
    #[command(flatten)]
    input: JsonInput,
}

#[derive(clap::Args)]
pub(crate) struct ChatBuildArgs {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    options: BuildOptions,
    #[command(flatten)]
    output: OutputArgs,
}

#[derive(clap::Args)]
pub(crate) struct RewindArgs {
    #[command(flatten)]
    target: Target,
    /// The chunk to rewind to: the new branch holds what came before it.
    #[arg(long, value_name = "CHUNK_ID")]
    to: String,
    /// The new branch's name (default: the branch's name with the next `-vN`).
    #[arg(long)]
    name: Option<String>,
}

#[derive(clap::Args)]
pub(crate) struct ForkArgs {
    #[command(flatten)]
    target: Target,
    /// The new branch's name.
    #[arg(long)]
    name: String,
}

#[derive(clap::Args)]
pub(crate) struct SwitchArgs {
    #[command(flatten)]
    chat: ChatArgs,
    /// The branch to make active.
    name: String,
}

#[derive(clap::Args)]
pub(crate) struct CheckpointArgs {
    #[command(flatten)]
    target: Target,
    /// The checkpoint's name.
    name: String,
    /// Move the checkpoint if it exists (without, an existing name is
    /// refused).
    #[arg(long)]
    force: bool,
}

#[derive(clap::Args)]
pub(crate) struct RestoreArgs {
    #[command(flatten)]
    chat: ChatArgs,
    /// The checkpoint.
    checkpoint: String,
    /// The new branch's name (default: the active branch's name with the
    /// next `-vN`).
    #[arg(long)]
    name: Option<String>,
}

pub(crate) fn run(command: ChatCommand) -> Result<String> {
    let value = match command {
        ChatCommand::Append(args) => append(&args)?,
        ChatCommand::Build(args) => return build(&args),
        ChatCommand::Export(target) => {
            let mut engine = target.open_existing(ContextBuilder::new())?;
            engine.export(&mut std::io::stdout().lock())?;
            return Ok(String::new());
        }
        ChatCommand::Rewind(args) => {
            let mut engine = args.target.open_existing(ContextBuilder::new())?;
            engine.rewind(&args.to, args.name.as_deref())?;
            position(&engine)
        }
        ChatCommand::Fork(args) => {
            let mut engine = args.target.open_existing(ContextBuilder::new())?;
            engine.fork(&args.name)?;
            json!({"chat": engine.chat(), "branch": args.name, "head": engine.head()})
        }
        ChatCommand::Switch(args) => {
            let target = Target {
                chat: args.chat,
                branch: None,
            };
            let mut engine = target.open_existing(ContextBuilder::new())?;
            if let Err(error) = engine.switch_branch(&args.name) {
                refuse_checkpoint_as_branch(&engine, &args.name)?;
                return Err(error);
            }
            position(&engine)
        }
        ChatCommand::Checkpoint(args) => {
            let mut engine = args.target.open_existing(ContextBuilder::new())?;
            if !args.force {
                refuse_existing_checkpoint(&engine, &args.name)?;
            }
            engine.checkpoint(&args.name)?;
            json!({"chat": engine.chat(), "checkpoint": args.name, "node": engine.head()})
        }
        ChatCommand::Restore(args) => {
            let target = Target {
                chat: args.chat,
                branch: None,
            };
            let mut engine = target.open_existing(ContextBuilder::new())?;
            engine.restore(&args.checkpoint, args.name.as_deref())?;
            position(&engine)
        }
        ChatCommand::Branches(args) => branches(&args)?,
        ChatCommand::List(args) => list(&args)?,
    };
    Ok(pretty(&value))
}

/// Where an engine stands: its chat, branch and head.
fn position(engine: &ContextEngine) -> Value {
    json!({"chat": engine.chat(), "branch": engine.branch(), "head": engine.head()})
}

/// Appends in one save, trying again from a fresh load when another writer
/// saved first. The input is read and checked before the store is opened.
fn append(args: &AppendArgs) -> Result<Value> {
    let input = read_chunks(&args.file, &args.input)?;
    if args.replace_last_assistant && input.chunks.len() != 1 {
        return Err(ErrorKind::Option {
            option: "replace-last-assistant".into(),
            message: format!(
                "the input must be exactly one assistant chunk to replace the last one, and it \
                 has {} chunks",
                input.chunks.len()
            ),
        }
        .into());
    }
    if let (true, Some(chunk)) = (args.replace_last_assistant, input.chunks.first())
        && !(chunk.kind == ChunkKind::Agent && chunk.role == Some(Role::Assistant))
    {
        return Err(ErrorKind::Option {
            option: "replace-last-assistant".into(),
            message: format!(
                "chunk {:?} is no assistant message (an `agent` chunk with role `assistant`), \
                 so it cannot replace one",
                chunk.id
            ),
        }
        .into());
    }
    check_chat_id(&args.target.chat.chat)?;
    let db = &args.target.chat.store.db;
    let other_branch = args
        .target
        .branch
        .as_deref()
        .is_some_and(|b| b != MAIN_BRANCH);
    let store = store::open(db, !other_branch)?;
    let mut builder = ContextBuilder::new();
    builder.model(&args.model);
    let mut attempts = 0;
    loop {
        attempts += 1;
        let mut engine = args.target.open(&store, builder.clone())?;
        if args.clear_system {
            engine.set_system_prompt(None);
            engine.set(Vec::new());
            engine.set_context_management(None);
        }
        let appended = apply(&mut engine, &input, args.replace_last_assistant)?;
        match engine.save() {
            Ok(()) => {
                let mut out = position(&engine);
                out["appended"] = json!(appended);
                if args.replace_last_assistant {
                    out["replaced"] = json!(appended == 0);
                }
                return Ok(out);
            }
            Err(error) if error.kind().is_conflict() && attempts < APPEND_ATTEMPTS => {
                continue;
            }
            Err(error) => return Err(error),
        }
    }
}

/// Puts the input in the engine as pending changes; returns how many
/// chunks it appends.
fn apply(engine: &mut ContextEngine, input: &MemoryState, replace: bool) -> Result<usize> {
    if input.system_prompt.is_some() {
        engine.set_system_prompt(input.system_prompt.clone());
    }
    if !input.fragments.is_empty() {
        engine.set(input.fragments.clone());
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

fn build(args: &ChatBuildArgs) -> Result<String> {
    let builder = args.output.builder(&args.options)?;
    builder.load_tables_in_background();
    let mut engine = args.target.open_existing(builder)?;
    let result = engine.build()?;
    // Counts the store lacked for these settings are kept for the next
    // process; the build stands even if they cannot be written.
    if let Err(error) = engine.keep_counts() {
        eprintln!("warning: the counts of this build could not be stored: {error}");
    }
    args.output.print(&result, &args.options)
}

fn branches(args: &ChatArgs) -> Result<Value> {
    check_chat_id(&args.chat)?;
    let store = store::open(&args.store.db, false)?;
    require_chat(&store, &args.chat)?;
    let branches: Vec<Value> = store
        .branches(&args.chat)?
        .into_iter()
        .map(|b| json!({"name": b.name, "head": b.head, "chunks": b.chunks, "active": b.active}))
        .collect();
    let checkpoints: Vec<Value> = store
        .checkpoints(&args.chat)?
        .into_iter()
        .map(|c| json!({"name": c.name, "node": c.node}))
        .collect();
    Ok(json!({"chat": args.chat, "branches": branches, "checkpoints": checkpoints}))
}

fn list(args: &StoreArgs) -> Result<Value> {
    let store = store::open(&args.db, false)?;
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

impl Target {
    /// The engine on this target, the chat created if missing.
    fn open(&self, store: &Arc<dyn Store>, builder: ContextBuilder) -> Result<ContextEngine> {
        let store = Arc::clone(store);
        match &self.branch {
            Some(branch) => ContextEngine::open_branch(store, &self.chat.chat, branch, builder),
            None => ContextEngine::open(store, &self.chat.chat, builder),
        }
    }

    /// The engine on this target of an existing store and chat.
    fn open_existing(&self, builder: ContextBuilder) -> Result<ContextEngine> {
        check_chat_id(&self.chat.chat)?;
        let store = store::open(&self.chat.store.db, false)?;
        require_chat(&store, &self.chat.chat)?;
        self.open(&store, builder)
    }
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

/// The input of `chat append`: a session JSON, or JSON Lines of chunks
/// (one chunk object per line; blank lines skipped), as a session.
fn read_chunks(file: &str, input: &JsonInput) -> Result<MemoryState> {
    let text = read_input(file, input.limit(), Expected::Session)?;
    let options = input.parse_options();
    if text.trim_start_matches('\u{feff}').trim().is_empty() {
        // Refused with the message `build` gives empty input.
        return MemoryState::from_json_str_with(&text, options);
    }
    match agent_context::parse_json(&text, options) {
        Ok(Value::Object(object)) if object.contains_key("kind") => {
            MemoryState::from_json_value(json!({"chunks": [Value::Object(object)]}))
        }
        Ok(value) => MemoryState::from_json_value(value),
        Err(whole) => {
            let mut lines = text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty());
            let first_is_chunk = lines.next().is_some_and(|(_, line)| {
                matches!(
                    agent_context::parse_json(line, options),
                    Ok(Value::Object(_))
                )
            });
            if !first_is_chunk {
                return Err(whole);
            }
            json_lines(&text, options)
        }
    }
}

/// JSON Lines of chunks as a session; an error names the line.
fn json_lines(text: &str, options: agent_context::ParseOptions) -> Result<MemoryState> {
    let mut chunks = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value = agent_context::parse_json(line, options).map_err(|error| ErrorKind::Io {
            context: format!("reading JSON Lines, line {}", number + 1),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, error.to_string()),
        })?;
        chunks.push(value);
    }
    MemoryState::from_json_value(json!({ "chunks": chunks }))
}
