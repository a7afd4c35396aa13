//! What `build` and `chat build` print: the output a build is shaped
//! into, and the warnings that go with it.

use std::fmt;

use crate::adapter::{self, NativeOptions};
use crate::{BuildResult, Result};

use super::BuildOptions;
use super::options::unused_factor_warning;

/// The shape of a build's output (`--output`; the CLI's flag reads it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[non_exhaustive]
pub enum Output {
    /// The build's report as JSON: messages with their chunks and tokens,
    /// and every decision.
    #[default]
    Report,
    /// OpenAI Chat Completions `{"messages": [...]}`, tool use as tagged text.
    Openai,
    /// Anthropic Messages `{"system", "messages"}`, roles alternating from
    /// `user`, tool use as tagged text.
    Anthropic,
    /// The messages as plain text, each under a `### role` line.
    Text,
    /// OpenAI Chat Completions with native tool calls.
    OpenaiNative,
    /// OpenAI Responses with native function calls.
    OpenaiResponses,
    /// Anthropic Messages with native tool use.
    AnthropicNative,
    /// The AI SDK's `{system, messages}`: `ModelMessage`s with tool-call
    /// and tool-result parts, for `generateText`.
    AiSdk,
}

impl Output {
    /// Every output, in `--help`'s order.
    pub const ALL: [Output; 8] = [
        Output::Report,
        Output::Openai,
        Output::Anthropic,
        Output::Text,
        Output::OpenaiNative,
        Output::OpenaiResponses,
        Output::AnthropicNative,
        Output::AiSdk,
    ];

    /// The output's name, as `--output` takes it: `openai-native`.
    pub fn as_str(self) -> &'static str {
        match self {
            Output::Report => "report",
            Output::Openai => "openai",
            Output::Anthropic => "anthropic",
            Output::Text => "text",
            Output::OpenaiNative => "openai-native",
            Output::OpenaiResponses => "openai-responses",
            Output::AnthropicNative => "anthropic-native",
            Output::AiSdk => "ai-sdk",
        }
    }

    /// The output named `name` (`openai_native` reads as `openai-native`).
    ///
    /// # Errors
    ///
    /// The message lists the outputs.
    pub fn from_name(name: &str) -> std::result::Result<Output, String> {
        let dashed = name.replace('_', "-");
        Output::ALL
            .into_iter()
            .find(|output| output.as_str() == dashed)
            .ok_or_else(|| {
                let names: Vec<_> = Output::ALL.iter().map(|o| o.as_str()).collect();
                format!(
                    "unknown output {name:?}; expected one of: {}",
                    names.join(", ")
                )
            })
    }

    /// Whether tool use is sent in the provider's own structures.
    pub fn is_native(self) -> bool {
        matches!(
            self,
            Output::OpenaiNative
                | Output::OpenaiResponses
                | Output::AnthropicNative
                | Output::AiSdk
        )
    }
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A command's output: what it prints on standard output, and the
/// warnings it writes to standard error.
#[derive(Debug, Clone)]
pub struct Printed {
    /// What goes to standard output.
    pub body: Body,
    /// The warnings, in the order the command writes them.
    pub warnings: Vec<String>,
    /// How many of the first `warnings` are the build's own, which
    /// [`BuildResult::explain`] lists (`--explain` writes it instead).
    pub build_warnings: usize,
    /// The build the body was made of (`None` for `count`), for a caller
    /// that explains it.
    pub result: Option<BuildResult>,
    /// The build as an HTML page, when the options asked for it
    /// ([`BuildOptions::html`]).
    pub html: Option<String>,
}

/// What a command prints: JSON, or text (`--output text`, `count`).
#[derive(Debug, Clone)]
pub enum Body {
    /// A build's report, written from the result itself.
    Report(Box<BuildResult>),
    /// A JSON value.
    Json(serde_json::Value),
    /// Text, as printed.
    Text(String),
}

impl Body {
    /// The body as the command prints it: pretty JSON (or the text) with a
    /// final newline.
    pub fn to_pretty(&self) -> String {
        let mut text = match self {
            Body::Report(result) => serde_json::to_string_pretty(result).unwrap_or_default(),
            Body::Json(value) => serde_json::to_string_pretty(value).unwrap_or_default(),
            Body::Text(text) => return text.clone(),
        };
        text.push('\n');
        text
    }

    /// The JSON as compact text, or `None` for a text body: the same value
    /// as [`to_pretty`](Self::to_pretty), in fewer bytes.
    pub fn to_compact_json(&self) -> Option<String> {
        match self {
            Body::Report(result) => serde_json::to_string(result).ok(),
            Body::Json(value) => serde_json::to_string(value).ok(),
            Body::Text(_) => None,
        }
    }
}

/// Shapes `result` into `options.output`, with the warnings the command
/// writes: the request's (native outputs) or the build's, then the
/// estimate factor's.
///
/// # Errors
///
/// An output that cannot be made of this build (Anthropic's, from a
/// history its roles cannot alternate in).
pub fn print(result: &BuildResult, options: &BuildOptions) -> Result<Printed> {
    let native = NativeOptions {
        cache_breakpoints: options.cache_control,
    };
    let request = match options.output {
        Output::OpenaiNative => Some(adapter::openai_chat_request(result)?),
        Output::OpenaiResponses => Some(adapter::openai_responses_request(result)?),
        Output::AnthropicNative => Some(adapter::anthropic_request(result, &native)?),
        Output::AiSdk => Some(adapter::ai_sdk_request(result)?),
        _ => None,
    };
    let mut warnings = request
        .as_ref()
        .map_or_else(|| result.warnings.to_vec(), |r| r.warnings.clone());
    let build_warnings = result.warnings.len().min(warnings.len());
    warnings.extend(unused_factor_warning(
        options.estimate_factor,
        &result.model,
        result.token_count_exact,
    ));
    let body = match (request, options.output) {
        (Some(request), _) => Body::Json(request.body),
        (None, Output::Openai) => Body::Json(adapter::openai(result)),
        (None, Output::Anthropic) => Body::Json(adapter::anthropic(result)?),
        (None, Output::Text) => Body::Text(adapter::text(result)),
        (None, _) => Body::Report(Box::new(result.clone())),
    };
    Ok(Printed {
        body,
        warnings,
        build_warnings,
        result: Some(result.clone()),
        html: None,
    })
}

#[cfg(all(test, feature = "cli"))]
mod tests {
    use clap::ValueEnum;

    use super::Output;

    /// The flag's values (derived from the variants) are the names the
    /// JSON and `from_name` use, for every output.
    #[test]
    fn the_flag_spells_each_output_as_its_name() {
        let flag: Vec<String> = Output::value_variants()
            .iter()
            .filter_map(|output| Some(output.to_possible_value()?.get_name().to_owned()))
            .collect();
        let names: Vec<&str> = Output::ALL.iter().map(|output| output.as_str()).collect();
        assert_eq!(flag, names);
    }
}
