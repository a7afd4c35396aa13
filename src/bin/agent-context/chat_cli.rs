//! `agent-context chat …`: durable chats in a SQLite file or on a
//! PostgreSQL server, from the shell.
//! Every verb prints one JSON object on stdout; `agent_context::command::chat`
//! does the work.

use agent_context::Result;
use agent_context::command::DEFAULT_MODEL;
use agent_context::command::chat::{self, AppendOptions, ChatTarget};
use clap::Subcommand;

use crate::build_flags::BuildOptions;
use crate::input::{Expected, JsonInput, read_input};
use crate::{OutputArgs, pretty};

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
    /// another encoding counts them when it first needs them); any model,
    /// since an append builds nothing and needs no budget.
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
        ChatCommand::Append(args) => {
            let text = read_input(&args.file, args.input.limit(), Expected::Session)?;
            let input = chat::read_chunks(&text, args.input.parse_options())?;
            let mut options = AppendOptions::default();
            options.replace_last_assistant = args.replace_last_assistant;
            options.clear_system = args.clear_system;
            options.model = args.model;
            chat::append(&args.target.into(), &input, &options)?
        }
        ChatCommand::Build(args) => {
            let options = args.options.to_options(Some(&args.output))?;
            let printed = chat::build(&args.target.into(), &options)?;
            return Ok(args.output.emit(&printed));
        }
        ChatCommand::Export(target) => {
            chat::export(&target.into(), &mut std::io::stdout().lock())?;
            return Ok(String::new());
        }
        ChatCommand::Rewind(args) => {
            chat::rewind(&args.target.into(), &args.to, args.name.as_deref())?
        }
        ChatCommand::Fork(args) => chat::fork(&args.target.into(), &args.name)?,
        ChatCommand::Switch(args) => chat::switch(&args.chat.into(), &args.name)?,
        ChatCommand::Checkpoint(args) => {
            chat::checkpoint(&args.target.into(), &args.name, args.force)?
        }
        ChatCommand::Restore(args) => {
            chat::restore(&args.chat.into(), &args.checkpoint, args.name.as_deref())?
        }
        ChatCommand::Branches(args) => chat::branches(&args.into())?,
        ChatCommand::List(args) => chat::list(&args.db)?,
    };
    Ok(pretty(&value))
}

impl From<Target> for ChatTarget {
    fn from(target: Target) -> ChatTarget {
        ChatTarget {
            branch: target.branch,
            ..target.chat.into()
        }
    }
}

impl From<ChatArgs> for ChatTarget {
    fn from(args: ChatArgs) -> ChatTarget {
        ChatTarget::new(args.store.db, args.chat)
    }
}
