//! What a command prints, handed to JavaScript as text: the body as
//! compact JSON (which the package parses once) or as the text of
//! `--output text`, with the warnings the CLI writes to standard error
//! and, with `explain`, its breakdown.

use agent_context::BuildResult;
use agent_context::command::{Body, Printed};
use napi_derive::napi;
use serde_json::Value;

/// A command's output.
#[napi(object)]
pub struct Outcome {
    /// The body as compact JSON, for a JSON output.
    pub json: Option<String>,
    /// The body as printed, for `--output text`.
    pub text: Option<String>,
    /// What the CLI writes as `warning: …`, in its order.
    pub warnings: Vec<String>,
    /// `--explain`'s breakdown of every decision, when asked for.
    pub explained: Option<String>,
    /// Whether `json` is a session's rows (`rows.rs`), to be put together
    /// with the rows of the session's last output.
    pub rows: bool,
}

impl Outcome {
    /// What `printed` says, with the breakdown of its build if `explain`
    /// (which then holds the build's own warnings, as the CLI's
    /// `--explain` does: they leave the warnings).
    pub fn of(printed: Printed, explain: bool) -> Outcome {
        let explained = printed
            .result
            .as_ref()
            .filter(|_| explain)
            .map(BuildResult::explain);
        let shown = match explained {
            Some(_) => printed.build_warnings,
            None => 0,
        };
        let mut warnings = printed.warnings;
        warnings.drain(..shown.min(warnings.len()));
        let (json, text) = match printed.body {
            Body::Text(text) => (None, Some(text)),
            body => (body.to_compact_json(), None),
        };
        Outcome {
            json,
            text,
            warnings,
            explained,
            rows: false,
        }
    }

    /// This output with its body as a session's rows.
    pub fn with_rows(self, rows: String) -> Outcome {
        Outcome {
            json: Some(rows),
            text: None,
            rows: true,
            ..self
        }
    }

    /// This output with `warnings` first (reading its input's).
    pub fn after(mut self, mut warnings: Vec<String>) -> Outcome {
        warnings.append(&mut self.warnings);
        self.warnings = warnings;
        self
    }

    /// A `chat` verb's JSON object.
    pub fn value(value: &Value) -> Outcome {
        Outcome::json(value.to_string())
    }

    /// JSON text the library wrote.
    pub fn json(json: String) -> Outcome {
        Outcome {
            json: Some(json),
            text: None,
            warnings: Vec::new(),
            explained: None,
            rows: false,
        }
    }
}
