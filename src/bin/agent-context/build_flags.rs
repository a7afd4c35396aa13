//! The flags `build`, `replay` and `chat build` share, turned into the
//! library's build options.

use agent_context::budget::CompactAt;
use agent_context::command::DEFAULT_MODEL;
use agent_context::command::{
    self, parse_cap, parse_content_format, parse_estimate_factor, parse_fragment_format,
    parse_kind, parse_threads,
};
use agent_context::content::ContentFormat;
use agent_context::format::FragmentFormat;
use agent_context::render::EscapeMode;
use agent_context::tokens::{EstimateFactor, Framing};
use agent_context::{ChunkKind, Result};
use clap::ValueEnum;
use clap::builder::{PossibleValue, TypedValueParser};
use std::ffi::OsStr;

use crate::OutputArgs;
use agent_context::BuildResult;

#[derive(clap::Args)]
pub(crate) struct BuildOptions {
    /// Model: picks the encoding and the default budget.
    #[arg(long, default_value = DEFAULT_MODEL)]
    model: String,
    /// Prompt budget in tokens (default: the model's context window).
    #[arg(long)]
    max_tokens: Option<usize>,
    /// Tokens held back for the reply (default 0; with `--output
    /// anthropic-native`, 4096 or a quarter of --max-tokens if less: the
    /// request's `max_tokens`, which Anthropic requires).
    #[arg(long)]
    reserve: Option<usize>,
    /// How chunk bodies are escaped.
    #[arg(long, value_enum, default_value_t = EscapeArg::Structural)]
    escape: EscapeArg,
    /// How message framing is counted.
    #[arg(long, value_enum, default_value_t = FramingArg::Openai)]
    framing: FramingArg,
    /// Format chunks' `content` blocks are written in.
    #[arg(long, value_name = "FORMAT", default_value = "gfm", value_parser = content_formats())]
    content_format: ContentFormat,
    /// Format of the session's fragments in the system message.
    #[arg(long, value_name = "FORMAT", default_value = "xml", value_parser = fragment_formats())]
    fragments_format: FragmentFormat,
    /// XML and Markdown fragments: gather the fragments whose name repeats
    /// among siblings under the plural of the name (`<hints><hint>…`);
    /// without it each is written as it comes. TOML and TOON always group.
    #[arg(long)]
    group_fragments: bool,
    /// Cap what each chunk of a kind or tag costs at N tokens, tag and cut
    /// marker included, e.g. `tool_result=2000`; `tool:NAME=N` caps the
    /// chunks of one tool (`tool:bash=500`), `id:CHUNK=N` one chunk; lift a
    /// cap with `NAME=none` (repeatable; the most specific cap wins: id,
    /// tool, tag, kind; tool results default to 8192; caps below 64 are
    /// raised to 64).
    #[arg(long = "cap", value_name = "NAME=N", value_parser = parse_cap)]
    caps: Vec<(String, Option<usize>)>,
    /// When trimming, trim down to this fraction of the budget (1.0: exactly to it).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.8)]
    low_water: f64,
    /// Anthropic's `context_management` for the build: inline JSON
    /// (`{"edits": [{"type": "clear_tool_uses_20250919"}]}`) or the path of
    /// a JSON file holding it. It replaces the session's own
    /// `context_management` (or, in `chat build`, the chat's).
    #[arg(long, value_name = "JSON|FILE")]
    context_management: Option<String>,
    /// Report `compaction_due` (true when the history before trimming
    /// costs more): a number of tokens, or a fraction of the budget (0.75).
    #[arg(long, value_name = "TOKENS|FRACTION", value_parser = command::parse_compact_at)]
    compact_at: Option<CompactAt>,
    /// Leave out chunks of this kind (repeatable).
    #[arg(long = "exclude-kind", value_name = "KIND", value_parser = parse_kind)]
    exclude_kinds: Vec<ChunkKind>,
    /// Estimates count F × o200k_base (default 1.6; from 1.0 to 16). Models
    /// counted exactly ignore it.
    #[arg(long, value_name = "F", value_parser = parse_estimate_factor)]
    estimate_factor: Option<EstimateFactor>,
    /// Threads to render and count on, 1 to 64 (default: the machine's, at
    /// most 4); a build starts no more than it has chunks to render at once.
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    threads: Option<usize>,
}

#[derive(Clone, Copy, ValueEnum)]
enum EscapeArg {
    Structural,
    Xml,
    None,
}

#[derive(Clone, Copy, ValueEnum)]
enum FramingArg {
    Openai,
    None,
}

/// The values of a content format flag, for `--help`.
pub(crate) fn content_formats() -> Listed<ContentFormat> {
    Listed {
        parse: parse_content_format,
        values: &[
            (
                "gfm",
                "GitHub Flavored Markdown: tables, task lists, strikethrough (also `markdown`)",
            ),
            (
                "commonmark",
                "CommonMark without extensions: task items as `- ✓` / `- ○`",
            ),
            ("xml", "HTML-like tags, text and attributes escaped"),
        ],
    }
}

/// The values of a fragments format flag, for `--help`.
pub(crate) fn fragment_formats() -> Listed<FragmentFormat> {
    Listed {
        parse: parse_fragment_format,
        values: &[
            ("xml", "Nested elements, text escaped"),
            (
                "markdown",
                "`## Title` sections of `- **key**: value` bullets (also `md`)",
            ),
            ("toml", "TOML tables"),
            (
                "toon",
                "TOON (spec v4): indented keys, uniform arrays as tables",
            ),
        ],
    }
}

/// A flag's value read by `parse` (which keeps its aliases, its case
/// rules and its message), with `values` and their help listed in
/// `--help` as clap lists a `ValueEnum`'s.
#[derive(Clone)]
pub(crate) struct Listed<T> {
    parse: fn(&str) -> Result<T, String>,
    values: &'static [(&'static str, &'static str)],
}

impl<T: Clone + Send + Sync + 'static> TypedValueParser for Listed<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        self.parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let values = self.values.iter();
        Some(Box::new(
            values.map(|&(name, help)| PossibleValue::new(name).help(help)),
        ))
    }
}

impl BuildOptions {
    /// The library's options these flags give, for `output` (`None` for
    /// `replay`, which prints no build).
    pub(crate) fn to_options(&self, output: Option<&OutputArgs>) -> Result<command::BuildOptions> {
        let mut options = command::BuildOptions::default();
        options.model = self.model.clone();
        options.max_tokens = self.max_tokens;
        options.reserve_output = self.reserve;
        options.escape = match self.escape {
            EscapeArg::Structural => EscapeMode::Structural,
            EscapeArg::Xml => EscapeMode::Xml,
            EscapeArg::None => EscapeMode::None,
        };
        options.framing = match self.framing {
            FramingArg::Openai => Framing::OpenAi,
            FramingArg::None => Framing::None,
        };
        options.content_format = self.content_format;
        options.fragments_format = self.fragments_format;
        options.group_fragments = self.group_fragments;
        options.caps = self.caps.clone();
        options.low_water = self.low_water;
        if let Some(value) = &self.context_management {
            options.context_management = Some(command::read_context_management(value)?);
        }
        options.compact_at = self.compact_at;
        options.exclude_kinds = self.exclude_kinds.clone();
        options.estimate_factor = self.estimate_factor;
        options.threads = self.threads;
        if let Some(output) = output {
            options.output = output.output;
            options.cache_control = !output.no_cache_control;
            if let Some(file) = &output.previous {
                let report = std::fs::read_to_string(file).map_err(|source| {
                    agent_context::ErrorKind::Io {
                        context: format!("reading --previous {file}"),
                        source,
                    }
                })?;
                options.previous = Some(BuildResult::from_report(&report, "--previous")?);
            }
            options.html = output.html.is_some();
        }
        Ok(options)
    }
}
