//! [`MessageText`]: a message's content, shared between a session and
//! every build's report.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;

use crate::syntax::str_like::str_like;

/// The content of a [`ContextMessage`](crate::ContextMessage): immutable
/// text behind a reference count.
///
/// A session's turn changes the newest messages of a prompt that may hold
/// hundreds: the others are carried over, and a copy of one costs a count,
/// not its text. It reads like a `&str` (`as_str`, `len`, `contains`…
/// through `Deref`), compares with strings and serializes as one.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct MessageText(Arc<str>);

impl MessageText {
    /// The text as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<String> for MessageText {
    fn from(text: String) -> Self {
        MessageText(Arc::from(text))
    }
}

impl From<&str> for MessageText {
    fn from(text: &str) -> Self {
        MessageText(Arc::from(text))
    }
}

impl From<MessageText> for String {
    fn from(text: MessageText) -> Self {
        text.as_str().to_owned()
    }
}

impl fmt::Debug for MessageText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

str_like!(MessageText);
