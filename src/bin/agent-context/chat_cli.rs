//! `agent-context chat …`: durable chats in a SQLite file or on a
//! PostgreSQL server, from the shell.
//! Every verb prints one JSON object on stdout; `agent_context::command::chat`
//! does the work.

use agent_context::Result;
use agent_context::command::DEFAULT_MODEL;
use agent_context::command::chat::{self, AppendOptions, ChatTarget};
use agent_context::command::chat_compact as compact;
use agent_context::compaction::{CompactionOptions, CompactionSummary, RequestFormat};
use clap::Subcommand;

use crate::build_flags::BuildOptions;
use crate::input::{Expected, InputLimit, JsonInput, read_input};
use crate::{OutputArgs, pretty};

#[derive(Subcommand)]
pub(crate) enum ChatCommand {
    /// Append chunks (a session JSON, or JSON Lines of chunks) in one save.
    #[command(mut_arg("db", |db| db.help(APPEND_DB_HELP)))]
    Append(AppendArgs),
    /// Build a branch's prompt, as `build` does on its export.
    Build(ChatBuildArgs),
    /// Plan a compaction (--plan: the span to fold and the request that
    /// summarizes it), or apply a plan with its summary (--apply).
    Compact(CompactArgs),
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
#[command(group(clap::ArgGroup::new("step").required(true).args(["plan", "apply"])))]
pub(crate) struct CompactArgs {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    options: BuildOptions,
    /// Plan: print the span to fold and the summarization request, or
    /// `{"plan": null, "reason": …}` when there is nothing to fold.
    #[arg(long)]
    plan: bool,
    /// Apply the plan this token seals, with --summary.
    #[arg(long, value_name = "TOKEN", requires = "summary")]
    apply: Option<String>,
    /// The summary's text: a file, or `-` for standard input.
    #[arg(long, value_name = "FILE|-", requires = "apply")]
    summary: Option<String>,
    /// The providers' own compaction items to keep with the summary: a JSON
    /// file holding `{"anthropic": BLOCK, "openai": ITEM}` (either key).
    #[arg(long, value_name = "FILE", requires = "apply")]
    native: Option<String>,
    /// Tokens of the newest history kept verbatim (default: a quarter of
    /// the budget).
    #[arg(long, value_name = "N", conflicts_with = "apply")]
    keep_tokens: Option<usize>,
    /// The model that writes the summary, which counts the request
    /// (default: --model).
    #[arg(long, value_name = "MODEL", conflicts_with = "apply")]
    summarizer_model: Option<String>,
    /// The summarizer's window: request and summary fit in it (default:
    /// the summarizer model's window).
    #[arg(long, value_name = "N", conflicts_with = "apply")]
    summarizer_max_tokens: Option<usize>,
    /// The most tokens the summary may take (default 2048).
    #[arg(long, value_name = "N", conflicts_with = "apply")]
    summary_tokens: Option<usize>,
    /// Instructions for the summarizer instead of the default template:
    /// text, or the path of a file holding it.
    #[arg(long, value_name = "TEXT|FILE", conflicts_with = "apply")]
    instructions: Option<String>,
    /// The request's shape: plain messages, an OpenAI Chat Completions
    /// body, or an Anthropic Messages body.
    #[arg(long, value_name = "FORMAT", default_value = "messages", value_parser = ["messages", "openai", "anthropic"], conflicts_with = "apply")]
    output: String,
    #[command(flatten)]
    input: InputLimit,
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
            return args.output.emit(&printed);
        }
        ChatCommand::Compact(args) => compact(args)?,
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

/// `chat compact`: a plan, or a plan applied.
fn compact(args: CompactArgs) -> Result<serde_json::Value> {
    let options = args.options.to_options(None)?;
    let target = args.target.into();
    if let (Some(plan), Some(file)) = (&args.apply, &args.summary) {
        let text = read_input(file, &args.input, Expected::Text)?;
        let mut summary = CompactionSummary::from(text);
        if let Some(file) = &args.native {
            let json = read_input(file, &args.input, Expected::JsonValue)?;
            summary = summary.with_native(compact::read_native(&json)?);
        }
        return compact::apply(&target, &options, plan, summary);
    }
    let mut compaction = CompactionOptions::default();
    compaction.keep_tokens = args.keep_tokens;
    compaction.summarizer_model = args.summarizer_model;
    compaction.summarizer_max_tokens = args.summarizer_max_tokens;
    compaction.summary_tokens = args.summary_tokens;
    compaction.instructions = match &args.instructions {
        Some(value) if std::path::Path::new(value).is_file() => {
            Some(read_input(value, &args.input, Expected::Text)?)
        }
        other => other.clone(),
    };
    compaction.request_format = RequestFormat::from_name(&args.output).unwrap_or_default();
    compact::plan(&target, &options, &compaction)
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
