//! The options of `build`, `replay` and `chat build`, as plain values, and
//! the builder they describe.

use crate::budget::{CompactAt, ContextManagement};
use crate::content::ContentFormat;
use crate::format::{FormatOptions, FragmentFormat};
use crate::render::EscapeMode;
use crate::settings::builder::DEFAULT_MODEL;
use crate::tokens::{Calibration, EstimateFactor, Framing};
use crate::{ChunkKind, ContextBuilder, ErrorKind, Result};

use super::Output;

/// What a build is asked for: the `build` command's flags, each under its
/// flag's name (`--max-tokens` is `max_tokens`) with its default.
///
/// ```
/// use agent_context::command::{BuildOptions, Output};
///
/// let mut options = BuildOptions::default();
/// options.max_tokens = Some(8_000);
/// options.caps.push(("tool_result".into(), Some(2_000)));
/// options.output = Output::Openai;
/// let builder = options.builder()?;
/// # Ok::<(), agent_context::Error>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BuildOptions {
    /// `--model`: picks the encoding and the default budget.
    pub model: String,
    /// `--max-tokens`: the prompt budget (default: the model's window).
    pub max_tokens: Option<usize>,
    /// `--reserve`: tokens held back for the reply (default 0; for
    /// [`Output::AnthropicNative`], see
    /// [`anthropic_default_reserve`](Self::anthropic_default_reserve)).
    pub reserve_output: Option<usize>,
    /// `--escape`: how chunk bodies are escaped.
    pub escape: EscapeMode,
    /// `--framing`: how message framing is counted.
    pub framing: Framing,
    /// `--content-format`: the format of chunks' `content` blocks.
    pub content_format: ContentFormat,
    /// `--fragments-format`: the format of the session's fragments.
    pub fragments_format: FragmentFormat,
    /// `--group-fragments`: repeated fragment names grouped under their
    /// plural in XML and Markdown.
    pub group_fragments: bool,
    /// `--cap NAME=N`, in order: a kind, a tag, `tool:NAME` or `id:CHUNK`,
    /// and its cap (`None` lifts it). Read with [`parse_cap`].
    pub caps: Vec<(String, Option<usize>)>,
    /// `--low-water`: the fraction of the budget a trim goes down to.
    pub low_water: f64,
    /// `--context-management`: Anthropic's object (read from its text with
    /// [`read_context_management`](super::read_context_management)).
    pub context_management: Option<ContextManagement>,
    /// `--compact-at`: when the report says compaction is due (read with
    /// [`parse_compact_at`]).
    pub compact_at: Option<CompactAt>,
    /// `--exclude-kind`: kinds left out.
    pub exclude_kinds: Vec<ChunkKind>,
    /// `--estimate-factor`: the factor of estimates.
    pub estimate_factor: Option<EstimateFactor>,
    /// `--threads` (default: the machine's, at most 4).
    pub threads: Option<usize>,
    /// `--output`: what to print.
    pub output: Output,
    /// Not `--no-cache-control`: Anthropic's `cache_control` breakpoints
    /// in [`Output::AnthropicNative`].
    pub cache_control: bool,
    /// The previous build (`--previous`): `build` keeps its cut while it
    /// fits, and both builds report what their prompt cache keeps of it
    /// ([`BuildResult::cache`](crate::BuildResult::cache)).
    pub previous: Option<crate::BuildResult>,
    /// Also make the build's page (`--html`): [`Printed::html`](super::Printed::html).
    pub html: bool,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            model: DEFAULT_MODEL.to_owned(),
            max_tokens: None,
            reserve_output: None,
            escape: EscapeMode::Structural,
            framing: Framing::OpenAi,
            content_format: ContentFormat::Gfm,
            fragments_format: FragmentFormat::Xml,
            group_fragments: false,
            caps: Vec::new(),
            low_water: DEFAULT_LOW_WATER,
            context_management: None,
            compact_at: None,
            exclude_kinds: Vec::new(),
            estimate_factor: None,
            threads: None,
            output: Output::Report,
            cache_control: true,
            previous: None,
            html: false,
        }
    }
}

/// `--low-water`'s default.
pub const DEFAULT_LOW_WATER: f64 = 0.8;

/// The threads a build uses unless told: past a few, the walk that decides
/// each chunk in order is what a cold build waits on.
const MAX_DEFAULT_THREADS: usize = 4;

/// The threads a build or a count uses unless told: the machine's
/// parallelism, at most [`MAX_DEFAULT_THREADS`].
pub(crate) fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_DEFAULT_THREADS)
}

/// The reply's tokens an Anthropic native request holds back (its
/// `max_tokens`) when no reserve is given.
pub const ANTHROPIC_DEFAULT_RESERVE: usize = 4096;

impl BuildOptions {
    /// The reserve for an Anthropic native request when none was given:
    /// [`ANTHROPIC_DEFAULT_RESERVE`], or a quarter of `max_tokens` if that
    /// is less.
    pub fn anthropic_default_reserve(&self) -> Option<usize> {
        let quarter = self.max_tokens.map_or(usize::MAX, |max| max / 4);
        self.reserve_output
            .is_none()
            .then(|| ANTHROPIC_DEFAULT_RESERVE.min(quarter))
    }

    /// The builder these options describe, set for their output.
    ///
    /// # Errors
    ///
    /// A setting the builder refuses (an empty model, a cap on a tag no
    /// renderer emits, a low-water mark out of range).
    pub fn builder(&self) -> Result<ContextBuilder> {
        let mut builder = self.policy_builder()?;
        let anthropic = matches!(self.output, Output::Anthropic | Output::AnthropicNative);
        builder.user_first(anthropic);
        if self.output == Output::AnthropicNative
            && let Some(reserve) = self.anthropic_default_reserve()
        {
            builder.reserve_output(reserve);
        }
        if self.output.is_native() {
            builder.protocol(crate::render::Protocol::Native);
        }
        Ok(builder)
    }

    /// The builder of the settings alone, whatever the output (`replay`'s).
    ///
    /// # Errors
    ///
    /// As [`builder`](Self::builder).
    pub fn policy_builder(&self) -> Result<ContextBuilder> {
        let mut builder = ContextBuilder::new();
        builder
            .model(&self.model)
            .reserve_output(self.reserve_output.unwrap_or(0))
            .escape(self.escape)
            .framing(self.framing)
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
        if let Some(management) = &self.context_management {
            builder.policy_mut().context_management = Some(management.clone());
        }
        builder.policy_mut().compact_at = self.compact_at;
        builder.threads(self.threads.unwrap_or_else(default_threads));
        for (name, tokens) in &self.caps {
            let target = builder.cap_target(name)?;
            builder.policy_mut().caps.set(target, *tokens);
        }
        Ok(builder)
    }
}

/// The warning for an estimate factor that changes nothing.
pub fn unused_factor_warning(
    factor: Option<EstimateFactor>,
    model: &str,
    exact: bool,
) -> Option<String> {
    factor.filter(|_| exact).map(|factor| {
        format!("--estimate-factor {factor} has no effect: model {model:?} is counted exactly")
    })
}

/// `NAME=N` or `NAME=none` (`--cap`'s value); split at the last `=`, so a
/// chunk id may hold one (`id:a=b=500`).
///
/// # Errors
///
/// The message says what was expected.
pub fn parse_cap(text: &str) -> std::result::Result<(String, Option<usize>), String> {
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
    Ok((name.to_owned(), tokens))
}

/// A number of threads, 1 to [`ContextBuilder::MAX_THREADS`] (`--threads`).
///
/// # Errors
///
/// The message says the range.
pub fn parse_threads(text: &str) -> std::result::Result<usize, String> {
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

/// A compaction trigger from its text (`--compact-at`): a whole number of
/// tokens (`100000`), or a fraction of the budget (`0.75`, `1.5`).
///
/// # Errors
///
/// The message says what is accepted.
pub fn parse_compact_at(text: &str) -> std::result::Result<CompactAt, String> {
    let wrong = || {
        format!(
            "{text:?} is neither a number of tokens (100000) nor a positive fraction of the \
             budget (0.75)"
        )
    };
    if let Ok(tokens) = text.parse::<usize>() {
        return Ok(CompactAt::Tokens(tokens));
    }
    match text.parse::<f64>() {
        Ok(fraction) if fraction.is_finite() && fraction > 0.0 => Ok(CompactAt::Fraction(fraction)),
        _ => Err(wrong()),
    }
}

/// An estimate factor from its text (`--estimate-factor`).
///
/// # Errors
///
/// The message says the range.
pub fn parse_estimate_factor(text: &str) -> std::result::Result<EstimateFactor, String> {
    text.parse::<EstimateFactor>()
        .map_err(|error| match error.into_kind() {
            ErrorKind::Option { message, .. } => message,
            other => other.to_string(),
        })
}

/// A chunk kind by its name (`--exclude-kind`).
///
/// # Errors
///
/// The message lists the kinds.
pub fn parse_kind(name: &str) -> std::result::Result<ChunkKind, String> {
    ChunkKind::from_name(name).ok_or_else(|| {
        let names: Vec<_> = ChunkKind::ALL.iter().map(|k| k.as_str()).collect();
        format!(
            "unknown kind {name:?}; expected one of: {}",
            names.join(", ")
        )
    })
}

/// A content format by its name (`--content-format`).
///
/// # Errors
///
/// The message lists the formats.
pub fn parse_content_format(name: &str) -> std::result::Result<ContentFormat, String> {
    ContentFormat::from_name(name)
        .ok_or_else(|| format!("unknown content format {name:?}; expected gfm, commonmark or xml"))
}

/// A fragments format by its name (`--fragments-format`, `render --format`).
///
/// # Errors
///
/// The message lists the formats.
pub fn parse_fragment_format(name: &str) -> std::result::Result<FragmentFormat, String> {
    name.parse::<FragmentFormat>().map_err(|e| e.to_string())
}

/// An escape mode by its name (`--escape`): `structural`, `xml` or `none`.
///
/// # Errors
///
/// The message lists the modes.
pub fn parse_escape(name: &str) -> std::result::Result<EscapeMode, String> {
    match name {
        "structural" => Ok(EscapeMode::Structural),
        "xml" => Ok(EscapeMode::Xml),
        "none" => Ok(EscapeMode::None),
        _ => Err(format!(
            "unknown escape mode {name:?}; expected structural, xml or none"
        )),
    }
}

/// A framing by its name (`--framing`): `openai` or `none`.
///
/// # Errors
///
/// The message lists the framings.
pub fn parse_framing(name: &str) -> std::result::Result<Framing, String> {
    match name {
        "openai" => Ok(Framing::OpenAi),
        "none" => Ok(Framing::None),
        _ => Err(format!("unknown framing {name:?}; expected openai or none")),
    }
}
