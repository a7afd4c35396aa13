//! What a command's input file is: a session, or the AI SDK's messages.

use crate::adapter::{AiSdkHistory, from_ai_sdk_at};
use crate::{MemoryState, ParseOptions, Result, parse_json};

/// The format of `build`'s, `render`'s and `replay`'s input (`--input`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[non_exhaustive]
pub enum InputFormat {
    /// The session JSON of docs/input.md.
    #[default]
    Session,
    /// The AI SDK's messages: an array of `UIMessage`s or `ModelMessage`s,
    /// or `{system, messages}` (read by `adapter::from_ai_sdk`).
    AiSdk,
}

impl InputFormat {
    /// Every input format, in `--help`'s order.
    pub const ALL: [InputFormat; 2] = [InputFormat::Session, InputFormat::AiSdk];

    /// The format's name, as `--input` takes it: `ai-sdk`.
    pub fn as_str(self) -> &'static str {
        match self {
            InputFormat::Session => "session",
            InputFormat::AiSdk => "ai-sdk",
        }
    }

    /// The format named `name` (`ai_sdk` reads as `ai-sdk`).
    ///
    /// # Errors
    ///
    /// The message lists the formats.
    pub fn from_name(name: &str) -> std::result::Result<InputFormat, String> {
        let dashed = name.replace('_', "-");
        InputFormat::ALL
            .into_iter()
            .find(|format| format.as_str() == dashed)
            .ok_or_else(|| format!("unknown input {name:?}; expected one of: session, ai-sdk"))
    }
}

/// Reads `text` as a session in `format`, with the warnings the reading
/// gave (parts of AI SDK messages no chunk holds).
///
/// # Errors
///
/// Malformed JSON, with line and column; a session or messages that break
/// their schema, naming where.
pub fn read_session(
    text: &str,
    format: InputFormat,
    options: ParseOptions,
) -> Result<(MemoryState, Vec<String>)> {
    match format {
        InputFormat::Session => Ok((MemoryState::from_json_str_with(text, options)?, Vec::new())),
        InputFormat::AiSdk => {
            let history = read_ai_sdk(text, 0, options)?;
            Ok((history.state, history.warnings))
        }
    }
}

/// The JSON text of AI SDK messages read from their place `first` in the
/// whole history (see [`from_ai_sdk_at`]): a binding's `fromAiSdk`.
///
/// # Errors
///
/// Malformed JSON, with line and column; messages that break the SDK's
/// types, naming where.
pub fn read_ai_sdk(text: &str, first: usize, options: ParseOptions) -> Result<AiSdkHistory> {
    from_ai_sdk_at(&parse_json(text, options)?, first)
}
