//! The `agent-context` command: a thin layer over the library.

use std::io::Write;
use std::process::ExitCode;

use agent_context::format::{
    Delimiter, FormatOptions, FragmentFormat, render_fragments, render_value,
};
use agent_context::tokens::{
    Calibration, EstimateFactor, counter_for_model_calibrated, estimate_warning,
};
use agent_context::{DEFAULT_MODEL, ErrorKind, adapter, fragments_from_json, parse_json};
use clap::{Parser, Subcommand, ValueEnum};
use input::{Expected, InputLimit, JsonInput, read_input};
use options::{BuildOptions, parse_estimate_factor, unused_factor_warning};

mod input;
mod options;
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
    /// Replay a recorded session turn by turn, building after each turn.
    Replay(replay::ReplayArgs),
}

#[derive(clap::Args)]
struct BuildArgs {
    /// Session JSON file, or `-` (the default) for standard input.
    #[arg(default_value = "-")]
    file: String,
    #[command(flatten)]
    options: BuildOptions,
    #[command(flatten)]
    input: JsonInput,
    /// What to print.
    #[arg(long, value_enum, default_value_t = OutputArg::Report)]
    output: OutputArg,
    /// Write a breakdown of every decision to standard error.
    #[arg(long)]
    explain: bool,
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
    #[command(flatten)]
    input: InputLimit,
}

#[derive(clap::Args)]
struct RenderArgs {
    /// JSON file, or `-` (the default) for standard input.
    #[arg(default_value = "-")]
    file: String,
    /// Output format: xml, markdown, toml or toon.
    #[arg(long, value_parser = parse_format)]
    format: FragmentFormat,
    /// Render any JSON value instead of a fragments document.
    #[arg(long)]
    data: bool,
    /// TOON field delimiter: `,`, `tab` or `pipe`.
    #[arg(long, default_value = ",", value_parser = parse_delimiter)]
    delimiter: Delimiter,
    /// Spaces per indentation level (XML and TOON).
    #[arg(long, default_value_t = 2)]
    indent: usize,
    #[command(flatten)]
    input: JsonInput,
}

#[derive(Clone, Copy, ValueEnum)]
enum OutputArg {
    Report,
    Openai,
    Anthropic,
    Text,
}

pub(crate) fn parse_format(name: &str) -> Result<FragmentFormat, String> {
    name.parse::<FragmentFormat>().map_err(|e| e.to_string())
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
        Command::Build(args) => build(args),
        Command::Count(args) => count(args),
        Command::Render(args) => render(args),
        Command::Replay(args) => replay::run(args),
    };
    match outcome {
        Ok(stdout) => {
            let mut out = std::io::stdout().lock();
            match out.write_all(stdout.as_bytes()).and_then(|()| out.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("error: writing output: {error}");
                    ExitCode::from(1)
                }
            }
        }
        Err(error) => {
            eprintln!("error: {error}");
            if let Some(hint) = input::flag_hint(error.kind()) {
                eprintln!("hint: {hint}");
            }
            ExitCode::from(exit_code(error.kind()))
        }
    }
}

/// 2 for input the caller must fix, 1 for a budget that cannot hold the
/// protected content (and anything else).
fn exit_code(kind: &ErrorKind) -> u8 {
    match kind {
        ErrorKind::Json { .. }
        | ErrorKind::JsonRejected { .. }
        | ErrorKind::EmptyHistory { .. }
        | ErrorKind::Session { .. }
        | ErrorKind::Chunk { .. }
        | ErrorKind::Option { .. }
        | ErrorKind::CapTooSmall { .. }
        | ErrorKind::UnknownCapTarget { .. }
        | ErrorKind::Fragment { .. }
        | ErrorKind::Io { .. } => 2,
        _ => 1,
    }
}

/// Builds, returning everything for stdout so nothing is half-written on error.
fn build(args: BuildArgs) -> agent_context::Result<String> {
    let state = input::read_session(&args.file, &args.input)?;
    let mut builder = args.options.builder()?;
    builder.user_first(matches!(args.output, OutputArg::Anthropic));
    let result = builder.build(&state)?;
    if args.explain {
        eprint!("{}", result.explain());
    } else {
        for warning in &result.warnings {
            eprintln!("warning: {warning}");
        }
    }
    let factor = args.options.estimate_factor;
    if let Some(warning) = unused_factor_warning(factor, &result.model, result.token_count_exact) {
        eprintln!("warning: {warning}");
    }
    Ok(match args.output {
        OutputArg::Report => pretty(&serde_json::to_value(&result).unwrap_or_default()),
        OutputArg::Openai => pretty(&adapter::openai(&result)),
        OutputArg::Anthropic => pretty(&adapter::anthropic(&result)?),
        OutputArg::Text => adapter::text(&result),
    })
}

fn count(args: CountArgs) -> agent_context::Result<String> {
    let text = read_input(&args.file, &args.input, Expected::Text)?;
    let calibration = args
        .estimate_factor
        .map_or_else(Calibration::new, Calibration::with_floor);
    let counter = counter_for_model_calibrated(&args.model, &calibration)?;
    let warnings = estimate_warning(&args.model, counter.as_ref())
        .into_iter()
        .chain(unused_factor_warning(
            args.estimate_factor,
            &args.model,
            counter.is_exact(),
        ));
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
    let tokens = counter.count(&text);
    Ok(if args.json {
        pretty(&serde_json::json!({
            "model": args.model,
            "encoding": counter.encoding_name(),
            "tokens": tokens,
            "exact": counter.is_exact(),
        }))
    } else {
        format!("{tokens}\n")
    })
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
    let options = FormatOptions::default()
        .with_delimiter(args.delimiter)
        .with_indent(args.indent);
    let mut out = if args.data {
        render_value(&value, args.format, &options)?
    } else {
        let fragments = match value {
            serde_json::Value::Object(mut object)
                if object.len() == 1 && object.contains_key("fragments") =>
            {
                fragments_from_json(object.remove("fragments").unwrap_or_default())?
            }
            _ => {
                return Err(ErrorKind::Session {
                    field: "(root)".into(),
                    message:
                        "expected {\"fragments\": [...]}; pass --data to render any JSON value"
                            .into(),
                }
                .into());
            }
        };
        render_fragments(&fragments, args.format, &options)?
    };
    out.push('\n');
    Ok(out)
}

fn pretty(value: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}
