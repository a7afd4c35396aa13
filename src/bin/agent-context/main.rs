//! The `agent-context` command: a thin layer over the library.

use std::io::Write;
use std::process::ExitCode;

use agent_context::command::DEFAULT_MODEL;
use agent_context::command::{
    self, CountOptions, Output, Printed, parse_estimate_factor, parse_threads,
};
use agent_context::content::{
    ContentFormat, Rendered, blocks_from_value, render_blocks, render_text,
};
use agent_context::format::{
    Delimiter, FormatOptions, FragmentFormat, render_fragments, render_value,
};
use agent_context::fragment::fragments_from_json;
use agent_context::tokens::EstimateFactor;
use agent_context::{BuildResult, ErrorKind, parse_json};
use build_flags::BuildOptions;
use clap::{Parser, Subcommand};
use input::{Expected, InputLimit, JsonInput, SessionInput, read_input};

/// The tokenizer tables are 200k small allocations made and freed at
/// start-up; mimalloc makes and frees them in a fraction of the system
/// allocator's time.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod build_flags;
mod chat_cli;
mod input;
mod replay;

/// Turn an agent's typed memory into budgeted LLM messages with exact token counts.
#[derive(Parser)]
#[command(name = "agent-context", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build the prompt of a session (JSON) within a token budget.
    Build(BuildArgs),
    /// Count the tokens of raw text.
    Count(CountArgs),
    /// Render structured context (`{"fragments": [...]}`, or any JSON with --data).
    Render(RenderArgs),
    /// Render content blocks (one block or an array) as text.
    Content(ContentArgs),
    /// Replay a recorded session turn by turn, building after each turn.
    Replay(replay::ReplayArgs),
    /// Durable chats in a store: append, build, export, branches.
    #[command(subcommand)]
    Chat(chat_cli::ChatCommand),
}

#[derive(clap::Args)]
struct BuildArgs {
    /// Session JSON file, or `-` (the default) for standard input.
    #[arg(default_value = "-")]
    file: String,
    #[command(flatten)]
    options: BuildOptions,
    #[command(flatten)]
    input: SessionInput,
    #[command(flatten)]
    output: OutputArgs,
}

#[derive(clap::Args)]
struct CountArgs {
    /// Text file, or `-` (the default) for standard input.
    #[arg(default_value = "-")]
    file: String,
    /// Model whose encoding counts.
    #[arg(long, default_value = DEFAULT_MODEL)]
    model: String,
    /// Print a JSON object instead of the bare number.
    #[arg(long)]
    json: bool,
    /// Estimates count F × o200k_base (default 1.6; from 1.0 to 16).
    #[arg(long, value_name = "F", value_parser = parse_estimate_factor)]
    estimate_factor: Option<EstimateFactor>,
    /// Threads a long text is counted on (default: the machine's, at most 4).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    threads: Option<usize>,
    #[command(flatten)]
    input: InputLimit,
}

#[derive(clap::Args)]
struct RenderArgs {
    /// JSON file, or `-` (the default) for standard input.
    #[arg(default_value = "-")]
    file: String,
    /// Output format.
    #[arg(long, value_parser = build_flags::fragment_formats())]
    format: FragmentFormat,
    /// Render any JSON value instead of a fragments document.
    #[arg(long)]
    data: bool,
    /// TOON only: the field delimiter, `,` (the default), `tab` or `pipe`.
    #[arg(long, value_parser = parse_delimiter)]
    delimiter: Option<Delimiter>,
    /// XML and TOON only: spaces per indentation level (default 2; 0 to 16,
    /// TOON at least 1).
    #[arg(long, value_name = "N")]
    indent: Option<usize>,
    /// XML and Markdown fragments: gather the fragments whose name repeats
    /// among siblings under the plural of the name (`<hints><hint>…`);
    /// without it each is written as it comes. TOML and TOON always group.
    #[arg(long)]
    group_fragments: bool,
    #[command(flatten)]
    input: JsonInput,
}

#[derive(clap::Args)]
struct ContentArgs {
    /// JSON file, or `-` (the default) for standard input.
    #[arg(default_value = "-")]
    file: String,
    /// Output format.
    #[arg(long, default_value = "gfm", value_parser = build_flags::content_formats())]
    format: ContentFormat,
    /// Print the output blocks as JSON (text blocks, media kept as they are).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    input: JsonInput,
}

fn parse_delimiter(name: &str) -> Result<Delimiter, String> {
    name.parse::<Delimiter>().map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            // Help and version go to stdout with success; usage errors to stderr with 2.
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { 2 } else { 0 });
        }
    };
    let outcome = match cli.command {
        Command::Build(args) => build(args).map_err(Failure::from),
        Command::Count(args) => count(args).map_err(Failure::from),
        Command::Render(args) => render(args).map_err(Failure::from),
        Command::Content(args) => content(args).map_err(Failure::from),
        Command::Replay(args) => replay::run(args),
        Command::Chat(command) => chat_cli::run(command).map_err(Failure::from),
    };
    let outcome = outcome.and_then(|stdout| {
        let mut out = std::io::stdout().lock();
        out.write_all(stdout.as_bytes())
            .and_then(|()| out.flush())
            .map_err(Failure::Output)
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        // The reader has all it wants (`| head`): end quietly, with the
        // status of a Unix tool killed by SIGPIPE.
        Err(Failure::Output(error)) if error.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::from(SIGPIPE_STATUS)
        }
        // A command that streams its output (`chat export`) meets the
        // closed pipe itself: the same quiet end.
        Err(Failure::Command(error)) if is_broken_pipe(&error) => ExitCode::from(SIGPIPE_STATUS),
        Err(Failure::Output(error)) => {
            eprintln!("error: writing output: {error}");
            ExitCode::from(1)
        }
        Err(Failure::Command(error)) => report(&error, ""),
        Err(Failure::During(step, error)) => report(&error, &format!("{step}: ")),
    }
}

/// Whether `error` is standard output closed under a streaming command.
fn is_broken_pipe(error: &agent_context::Error) -> bool {
    matches!(error.kind(), agent_context::ErrorKind::Io { source, .. }
        if source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// 128 + SIGPIPE (13), what a shell reports for a tool a closed pipe ended.
const SIGPIPE_STATUS: u8 = 141;

/// Prints `error` (after `step`, which says where it happened) and its
/// hint to stderr; returns the exit code of its kind.
fn report(error: &agent_context::Error, step: &str) -> ExitCode {
    eprintln!("error: {step}{error}");
    if let Some(hint) = input::flag_hint(error.kind()) {
        eprintln!("hint: {hint}");
    }
    ExitCode::from(command::exit_code(error.kind()))
}

/// Why a command failed: its input or options (or a budget too small),
/// the same in a step it names (`replay`'s turn), or standard output that
/// cannot be written.
pub(crate) enum Failure {
    Command(agent_context::Error),
    During(String, agent_context::Error),
    Output(std::io::Error),
}

impl From<agent_context::Error> for Failure {
    fn from(error: agent_context::Error) -> Self {
        Failure::Command(error)
    }
}

/// Builds, returning everything for stdout so nothing is half-written on error.
fn build(args: BuildArgs) -> agent_context::Result<String> {
    let options = args.options.to_options(Some(&args.output))?;
    // The tables load while the session is read.
    options.builder()?.load_tables_in_background();
    let state = input::read_session(&args.file, &args.input)?;
    let printed = command::build(&state, &options)?;
    args.output.emit(&printed)
}

/// What `build` and `chat build` print, and how.
#[derive(clap::Args)]
pub(crate) struct OutputArgs {
    /// What to print.
    #[arg(long, value_enum, default_value_t = Output::Report)]
    output: Output,
    /// Write a breakdown of every decision to standard error.
    #[arg(long)]
    explain: bool,
    /// Leave out Anthropic's `cache_control` breakpoints (anthropic-native).
    #[arg(long)]
    no_cache_control: bool,
    /// The JSON report of the previous build of this session: the report
    /// says what a prompt cache keeps of its prompt, and where and why the
    /// prefix broke (`cache`); `build` also keeps its cut while it fits.
    #[arg(long, value_name = "REPORT")]
    previous: Option<String>,
    /// Also write the build as one self-contained HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    html: Option<std::path::PathBuf>,
}

impl OutputArgs {
    /// Writes the warnings (or, with `--explain`, the build's breakdown)
    /// to stderr and returns stdout.
    pub(crate) fn emit(&self, printed: &Printed) -> agent_context::Result<String> {
        if let (Some(path), Some(html)) = (&self.html, &printed.html) {
            write_page(path, html)?;
        }
        let shown = match (self.explain, &printed.result) {
            (true, Some(result)) => explain(result, printed),
            _ => 0,
        };
        write_warnings(&printed.warnings[shown..]);
        Ok(printed.body.to_pretty())
    }
}

/// Writes an HTML page to `path`, whole or not at all: into a file
/// beside it, then renamed over it.
pub(crate) fn write_page(path: &std::path::Path, html: &str) -> agent_context::Result<()> {
    let failed = |source| agent_context::ErrorKind::Io {
        context: format!("writing --html {}", path.display()),
        source,
    };
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    std::fs::write(&partial, html).map_err(failed)?;
    std::fs::rename(&partial, path).map_err(failed)?;
    Ok(())
}

/// Writes the breakdown of `result`; returns how many of the warnings
/// it holds (the build's own).
fn explain(result: &BuildResult, printed: &Printed) -> usize {
    eprint!("{}", result.explain());
    printed.build_warnings
}

fn write_warnings(warnings: &[String]) {
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
}

fn count(args: CountArgs) -> agent_context::Result<String> {
    let mut options = CountOptions::default();
    options.model = args.model;
    options.estimate_factor = args.estimate_factor;
    options.json = args.json;
    options.threads = args.threads;
    if options.model.is_empty() {
        // Refused before the input is read.
        command::count("", &options)?;
    }
    let text = read_input(&args.file, &args.input, Expected::Text)?;
    let (_, printed) = command::count(&text, &options)?;
    write_warnings(&printed.warnings);
    Ok(printed.body.to_pretty())
}

/// Renders a fragments document (or, with `--data`, any JSON value).
fn render(args: RenderArgs) -> agent_context::Result<String> {
    let expected = if args.data {
        Expected::JsonValue
    } else {
        Expected::FragmentsDocument
    };
    let text = read_input(&args.file, args.input.limit(), expected)?;
    let value = parse_json(&text, args.input.parse_options())?;
    let options = format_options(&args)?;
    let mut out = if args.data {
        render_value(&value, args.format, &options)?
    } else {
        let fragments = match value {
            serde_json::Value::Object(mut object)
                if object.len() == 1 && object.contains_key("fragments") =>
            {
                fragments_from_json(object.remove("fragments").unwrap_or_default())?
            }
            other => return Err(not_a_fragments_document(&other).into()),
        };
        render_fragments(&fragments, args.format, &options)?
    };
    out.push('\n');
    Ok(out)
}

/// `content`: blocks as text joined by a blank line, or as JSON blocks.
fn content(args: ContentArgs) -> agent_context::Result<String> {
    let text = read_input(&args.file, args.input.limit(), Expected::JsonValue)?;
    let value = parse_json(&text, args.input.parse_options())?;
    let blocks = blocks_from_value(value)?;
    let renderer = args.format.renderer();
    let mut out = if args.json {
        let output: Vec<serde_json::Value> = render_blocks(&blocks, renderer)
            .into_iter()
            .map(|rendered| match rendered {
                Rendered::Text(text) => serde_json::json!({"type": "text", "text": text}),
                Rendered::Native(block) => serde_json::to_value(block).unwrap_or_default(),
            })
            .collect();
        serde_json::to_string_pretty(&output).unwrap_or_default()
    } else {
        render_text(&blocks, renderer)
    };
    out.push('\n');
    Ok(out)
}

/// The options of `render --format`: a `--delimiter` or `--indent` the
/// format does not use is refused rather than ignored.
fn format_options(args: &RenderArgs) -> Result<FormatOptions, ErrorKind> {
    let format = args.format;
    let unused = |flag: &str, formats: &str| ErrorKind::Option {
        option: flag.into(),
        message: format!(
            "--format {format} takes no {flag}; it applies to {formats} only, so drop it"
        ),
    };
    let mut options = FormatOptions::default();
    if let Some(delimiter) = args.delimiter {
        if format != FragmentFormat::Toon {
            return Err(unused("--delimiter", "toon"));
        }
        options = options.with_delimiter(delimiter);
    }
    if let Some(indent) = args.indent {
        if !matches!(format, FragmentFormat::Xml | FragmentFormat::Toon) {
            return Err(unused("--indent", "xml and toon"));
        }
        options = options.with_indent(indent);
    }
    if args.group_fragments {
        if args.data {
            return Err(ErrorKind::Option {
                option: "--group-fragments".into(),
                message: "--data renders a JSON value, which has no fragments to group; \
                          drop one of the two"
                    .into(),
            });
        }
        options = options.with_group_fragments(true);
    }
    Ok(options)
}

/// The error for a JSON value `render` was to read as `{"fragments": [...]}`.
fn not_a_fragments_document(value: &serde_json::Value) -> ErrorKind {
    let found = match value {
        serde_json::Value::Object(object) => match object.keys().find(|k| *k != "fragments") {
            Some(key) => format!("it has the key {key:?}"),
            None => "it is empty".to_owned(),
        },
        _ => "it is not an object".to_owned(),
    };
    ErrorKind::Fragment {
        path: "(root)".into(),
        message: format!(
            "a fragments document is an object with the one key \"fragments\" \
             ({{\"fragments\": [...]}}), but {found}; pass --data to render any JSON value"
        ),
    }
}

pub(crate) fn pretty(value: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}
