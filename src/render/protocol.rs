//! How the prompt speaks to the provider: [`Protocol`].

/// How the prompt speaks to the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Protocol {
    /// Every chunk is tagged text inside `{role, content}` messages (the
    /// design's default rendering).
    #[default]
    Text,
    /// Tool calls and results, and thinking with a signature, are sent as
    /// the provider's native structures; every other chunk as text. Read
    /// the build with a native adapter such as
    /// [`openai_chat_request`](crate::adapter::openai_chat_request): its
    /// history messages hold one JSON record per chunk, which the text
    /// adapters would print as they are.
    Native,
}
