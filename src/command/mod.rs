//! The commands of the `agent-context` CLI as library calls, for every
//! front end that must answer exactly as the CLI does (the command line
//! itself, the Python package).
//!
//! The options are plain values named after the flags, with the flags'
//! defaults ([`BuildOptions`], [`CountOptions`], [`chat::AppendOptions`]);
//! each command returns what the CLI prints: a [`Printed`] body with its
//! warnings, or for the `chat` verbs the JSON object. The command line
//! maps its parsed flags onto these and writes the result, so a binding
//! that calls them gives the CLI's output byte for byte.
//!
//! Errors here speak the command's language: they may name a flag
//! (`--context-management`, `--force`), since that is what the CLI prints.
//!
//! ```
//! use agent_context::MemoryState;
//! use agent_context::command::{self, BuildOptions, Output};
//!
//! let state = MemoryState::from_json_str(
//!     r#"{"chunks": [{"id": "u1", "kind": "agent", "role": "user", "text": "Hi"}]}"#,
//! )?;
//! let mut options = BuildOptions::default();
//! options.max_tokens = Some(1_000);
//! options.output = Output::Openai;
//! let printed = command::build(&state, &options)?;
//! assert!(printed.body.to_pretty().starts_with("{\n  \"messages\""));
//! # Ok::<(), agent_context::Error>(())
//! ```

pub mod chat;
pub mod chat_compact;
mod count;
mod error_class;
mod input_format;
mod management_option;
mod options;
mod output;
mod output_session;

/// Whether two number texts are the same value: what the bindings ask
/// before they hand a JSON number over as a native float.
pub use crate::settings::builder::DEFAULT_MODEL;
pub use crate::syntax::json_input::MAX_JSON_DEPTH;
pub use crate::syntax::json_number::same_value;
pub use count::{CountOptions, count};
pub use error_class::{ErrorClass, error_class};
pub use input_format::{InputFormat, read_ai_sdk, read_session};
pub use management_option::read_context_management;
pub use options::{
    ANTHROPIC_DEFAULT_RESERVE, BuildOptions, DEFAULT_LOW_WATER, parse_cap, parse_compact_at,
    parse_content_format, parse_escape, parse_estimate_factor, parse_fragment_format,
    parse_framing, parse_kind, parse_threads, unused_factor_warning,
};
pub use output::{Body, Output, Printed, print};
pub use output_session::OutputSession;

use crate::{ContextConfig, ErrorKind, MemoryState, Result};

/// `build`: the prompt of `state` within the budget, shaped into
/// `options.output`, with the warnings the command writes.
///
/// # Errors
///
/// Settings the builder refuses, protected content that does not fit
/// ([`ErrorKind::BudgetExceeded`]), or an
/// output that cannot be made of the build.
pub fn build(state: &MemoryState, options: &BuildOptions) -> Result<Printed> {
    let mut builder = options.builder()?;
    if let Some(previous) = &options.previous {
        builder.previous(previous);
    }
    build_compiled(state, &builder.compile()?, options)
}

/// [`build`] with `config`, the options' builder compiled once for many
/// builds (a binding's builder object).
///
/// # Errors
///
/// As [`build`], but for the settings, which compiling checked.
pub fn build_compiled(
    state: &MemoryState,
    config: &ContextConfig,
    options: &BuildOptions,
) -> Result<Printed> {
    let result = config.build(state)?;
    let mut printed = print(&result, options)?;
    if options.html {
        printed.html = Some(crate::adapter::html::window_page(&result, Some(state)));
    }
    Ok(printed)
}

/// The exit status the CLI ends with for an error of `kind`: 2 for input
/// the caller must fix (JSON, schema, options, chats and stores named
/// wrong, unreadable files), 1 for a budget that cannot hold the protected
/// content, and anything else.
pub fn exit_code(kind: &ErrorKind) -> u8 {
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
        | ErrorKind::Content { .. }
        | ErrorKind::Chat { .. }
        | ErrorKind::Compaction { .. }
        | ErrorKind::NotAStore { .. }
        | ErrorKind::Io { .. } => 2,
        _ => 1,
    }
}

/// One message of `adapter::openai`'s `messages`, for a binding that
/// converts a result's messages one at a time.
pub fn openai_message(message: &crate::ContextMessage, model: &str) -> serde_json::Value {
    crate::adapter::openai_message(message, model)
}
