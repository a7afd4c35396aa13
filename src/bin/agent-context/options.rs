//! The flags `build` and `replay` share, turned into a builder.

use agent_context::content::ContentFormat;
use agent_context::format::{FormatOptions, FragmentFormat};
use agent_context::render::EscapeMode;
use agent_context::tokens::{Calibration, EstimateFactor, Framing};
use agent_context::{ChunkKind, ContextBuilder, DEFAULT_MODEL, ErrorKind};
use clap::ValueEnum;
use clap::builder::{PossibleValue, TypedValueParser};
use std::ffi::OsStr;

use crate::context_management::read_context_management;
use crate::parse_format;

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
    pub(crate) reserve: Option<usize>,
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
    caps: Vec<CapSetting>,
    /// When trimming, trim down to this fraction of the budget (1.0: exactly to it).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.8)]
    low_water: f64,
    /// Anthropic's `context_management` for the build: inline JSON
    /// (`{"edits": [{"type": "clear_tool_uses_20250919"}]}`) or the path of
    /// a JSON file holding it. It replaces the session's own
    /// `context_management` (or, in `chat build`, the chat's).
    #[arg(long, value_name = "JSON|FILE")]
    context_management: Option<String>,
    /// Leave out chunks of this kind (repeatable).
    #[arg(long = "exclude-kind", value_name = "KIND", value_parser = parse_kind)]
    exclude_kinds: Vec<ChunkKind>,
    /// Estimates count F × o200k_base (default 1.6; from 1.0 to 16). Models
    /// counted exactly ignore it.
    #[arg(long, value_name = "F", value_parser = parse_estimate_factor)]
    pub(crate) estimate_factor: Option<EstimateFactor>,
    /// Threads to render and count on, 1 to 64 (default: the machine's, at
    /// most 4); a build starts no more than it has chunks to render at once.
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    threads: Option<usize>,
}

/// The threads a build uses unless told: past a few, the walk that decides
/// each chunk in order is what a cold build waits on.
const MAX_DEFAULT_THREADS: usize = 4;

fn parse_threads(text: &str) -> Result<usize, String> {
    let most = ContextBuilder::MAX_THREADS;
    match text.parse::<usize>() {
        Ok(threads) if threads > most => Err(format!(
            "{threads} threads is more than the most a build uses, {most}; give 1 to {most}"
        )),
        Ok(threads) if threads > 0 => Ok(threads),
        _ => Err(format!(
            "{text:?} is not a number of threads; give 1 to {most}"
        )),
    }
}

pub(crate) fn parse_estimate_factor(text: &str) -> Result<EstimateFactor, String> {
    text.parse::<EstimateFactor>()
        .map_err(|error| match error.into_kind() {
            ErrorKind::Option { message, .. } => message,
            other => other.to_string(),
        })
}

/// The warning for an `--estimate-factor` that changes nothing.
pub(crate) fn unused_factor_warning(
    factor: Option<EstimateFactor>,
    model: &str,
    exact: bool,
) -> Option<String> {
    factor.filter(|_| exact).map(|factor| {
        format!("--estimate-factor {factor} has no effect: model {model:?} is counted exactly")
    })
}

/// One `--cap NAME=N`: the name, read against the builder's renderers once
/// they are known, and the cap (`None` lifts it).
#[derive(Clone)]
struct CapSetting {
    name: String,
    tokens: Option<usize>,
}

/// `NAME=N` or `NAME=none`; the value is split at the last `=`, so a chunk
/// id may hold one (`id:a=b=500`).
fn parse_cap(text: &str) -> Result<CapSetting, String> {
    let Some((name, value)) = text.rsplit_once('=') else {
        return Err(
            "expected NAME=N, e.g. tool_result=2000, tool:bash=500 or id:r7=none".to_owned(),
        );
    };
    if name.is_empty() {
        return Err(
            "the name before `=` is missing: a kind, a tag, tool:NAME or id:CHUNK".to_owned(),
        );
    }
    let tokens = match value {
        "none" | "off" => None,
        n => Some(
            n.parse::<usize>()
                .map_err(|_| format!("{n:?} is not a token count (or \"none\")"))?,
        ),
    };
    Ok(CapSetting {
        name: name.to_owned(),
        tokens,
    })
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

fn parse_kind(name: &str) -> Result<ChunkKind, String> {
    ChunkKind::from_name(name).ok_or_else(|| {
        let names: Vec<_> = ChunkKind::ALL.iter().map(|k| k.as_str()).collect();
        format!(
            "unknown kind {name:?}; expected one of: {}",
            names.join(", ")
        )
    })
}

/// A content format by its name.
pub(crate) fn parse_content_format(name: &str) -> Result<ContentFormat, String> {
    ContentFormat::from_name(name)
        .ok_or_else(|| format!("unknown content format {name:?}; expected gfm, commonmark or xml"))
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
        parse: parse_format,
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

/// The reply's tokens an Anthropic native request holds back (its
/// `max_tokens`) when `--reserve` is not given.
pub(crate) const ANTHROPIC_DEFAULT_RESERVE: usize = 4096;

impl BuildOptions {
    /// The reserve for an Anthropic native request when none was given:
    /// [`ANTHROPIC_DEFAULT_RESERVE`], or a quarter of `--max-tokens` if that
    /// is less.
    pub(crate) fn anthropic_default_reserve(&self) -> Option<usize> {
        let quarter = self.max_tokens.map_or(usize::MAX, |max| max / 4);
        self.reserve
            .is_none()
            .then(|| ANTHROPIC_DEFAULT_RESERVE.min(quarter))
    }

    /// The builder these flags describe, its policy included.
    pub(crate) fn builder(&self) -> agent_context::Result<ContextBuilder> {
        let mut builder = ContextBuilder::new();
        builder
            .model(&self.model)
            .reserve_output(self.reserve.unwrap_or(0))
            .escape(match self.escape {
                EscapeArg::Structural => EscapeMode::Structural,
                EscapeArg::Xml => EscapeMode::Xml,
                EscapeArg::None => EscapeMode::None,
            })
            .framing(match self.framing {
                FramingArg::Openai => Framing::OpenAi,
                FramingArg::None => Framing::None,
            })
            .exclude_kinds(self.exclude_kinds.iter().copied())
            .fragments_format(self.fragments_format)
            .fragment_options(FormatOptions::default().with_group_fragments(self.group_fragments))
            .content_format(self.content_format);
        if let Some(max_tokens) = self.max_tokens {
            builder.max_tokens(max_tokens);
        }
        if let Some(factor) = self.estimate_factor {
            builder.calibration(Calibration::with_floor(factor));
        }
        builder.policy_mut().low_water = self.low_water;
        if let Some(value) = &self.context_management {
            builder.policy_mut().context_management = Some(read_context_management(value)?);
        }
        builder.threads(self.threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(MAX_DEFAULT_THREADS)
        }));
        for setting in &self.caps {
            let target = builder.cap_target(&setting.name)?;
            builder.policy_mut().caps.set(target, setting.tokens);
        }
        Ok(builder)
    }
}
