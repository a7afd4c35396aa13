//! The summarization request: fixed instructions, then the span as the
//! prompt showed it, counted for the summarizer model as OpenAI frames
//! chat messages (each message 3 tokens plus its role and content, 3 for
//! the reply's priming).

use serde_json::{Value, json};

use super::RequestFormat;
use crate::tokens::TokenCounter;

/// The default instructions; `{summary_tokens}` is replaced by the limit.
pub(crate) const DEFAULT_INSTRUCTIONS: &str = "\
You compact an AI agent's working history so the agent can continue the task without it.
Write a summary of the history below for the agent itself, in at most {summary_tokens} tokens, under these headings:
Goal: what the agent was asked to do, and by whom.
Decisions: what it decided, and why.
Progress: what is done, with results that matter.
Open problems: errors, failing checks and questions not yet resolved.
Files and identifiers: every path, name, id, command and value the agent still needs, exactly as written.
Next steps: what it was about to do.
Earlier summaries in the history (compaction_summary) are part of it: keep what they say that still matters.
Write only the summary.";

/// What comes before the span in the user message.
const SPAN_HEAD: &str = "The history to summarize, oldest first:\n\n";

/// The framing of one chat message and of the reply's priming.
const MESSAGE_FRAME: usize = 3;
const PRIMING: usize = 3;

/// A summarization request: system instructions and one user message.
pub(super) struct Request {
    system: String,
    user: String,
}

impl Request {
    /// The request for `span` (the folded chunks' texts, in order) under
    /// `instructions` (the default template when `None`).
    pub(super) fn new(instructions: Option<&str>, summary_tokens: usize, span: &[&str]) -> Self {
        let system = match instructions {
            Some(text) => text.to_owned(),
            None => DEFAULT_INSTRUCTIONS.replace("{summary_tokens}", &summary_tokens.to_string()),
        };
        let mut user = String::from(SPAN_HEAD);
        user.push_str(&span.join(crate::tokens::parts::SEPARATOR));
        Request { system, user }
    }

    /// Its tokens for `counter`, framed as chat messages.
    pub(super) fn tokens(&self, counter: &dyn TokenCounter) -> usize {
        let message = |role: &str, content: &str| {
            MESSAGE_FRAME + counter.count(role) + counter.count(content)
        };
        message("system", &self.system) + message("user", &self.user) + PRIMING
    }

    /// The request in `format`, for `model`, asking for at most
    /// `summary_tokens`.
    pub(super) fn to_json(
        &self,
        format: RequestFormat,
        model: &str,
        summary_tokens: usize,
    ) -> Value {
        let messages = json!([
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.user},
        ]);
        match format {
            RequestFormat::Messages => messages,
            RequestFormat::OpenAi => json!({
                "model": model,
                "messages": messages,
                "max_completion_tokens": summary_tokens,
            }),
            RequestFormat::Anthropic => json!({
                "model": model,
                "max_tokens": summary_tokens,
                "system": self.system,
                "messages": [{"role": "user", "content": self.user}],
            }),
        }
    }
}
