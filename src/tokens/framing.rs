//! The tokens a provider adds around each message.

use crate::model::roles::Role;
use crate::tokens::TokenCounter;

/// How message framing is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Framing {
    /// OpenAI's cookbook rule: each message costs `3 + tokens(role) +
    /// tokens(content)`, and the reply is primed with 3 more.
    #[default]
    OpenAi,
    /// Content only.
    None,
}

impl Framing {
    /// Tokens a message costs beyond its content.
    pub fn per_message(self, counter: &dyn TokenCounter, role: Role) -> usize {
        match self {
            Framing::OpenAi => 3 + counter.count(role.as_str()),
            Framing::None => 0,
        }
    }

    /// Tokens the reply priming costs, once per request with at least one message.
    pub fn priming(self) -> usize {
        match self {
            Framing::OpenAi => 3,
            Framing::None => 0,
        }
    }

    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Framing::OpenAi => "openai",
            Framing::None => "none",
        }
    }
}
