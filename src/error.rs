//! The crate's one error type.
//!
//! [`Error`] wraps a boxed [`ErrorKind`] so that `Result<T>` stays one pointer
//! wide on the happy path; the kind carries the context a caller needs to fix
//! the input (chunk index and id, field, line and column, token figures).

use std::fmt;

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong, with the context to fix it.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(Box<ErrorKind>);

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0
    }

    /// Consumes the error, returning its kind.
    pub fn into_kind(self) -> ErrorKind {
        *self.0
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error(Box::new(kind))
    }
}

/// Where a chunk sits in the input: its index in `chunks` and its id, when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkLocation {
    /// Index in the session's `chunks` array.
    pub index: usize,
    /// The chunk's `id`, if it had a readable one.
    pub id: Option<String>,
}

impl fmt::Display for ChunkLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.id {
            Some(id) => write!(f, "chunks[{}] (id {:?})", self.index, id),
            None => write!(f, "chunks[{}]", self.index),
        }
    }
}

/// The kinds of [`Error`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input is not valid JSON.
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Json {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What the parser expected.
        message: String,
    },
    /// The session JSON is well formed but breaks the schema outside any chunk.
    #[error("invalid session: field `{field}`: {message}")]
    Session {
        /// The offending top-level field.
        field: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A chunk breaks the schema.
    #[error("invalid chunk {location}: field `{field}`: {message}")]
    Chunk {
        /// Which chunk.
        location: ChunkLocation,
        /// The offending field.
        field: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A builder option is inconsistent.
    #[error("invalid option `{option}`: {message}")]
    Option {
        /// The option's name.
        option: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A cap on a chunk is below what the chunk costs with its body cut to
    /// nothing: its tag, attributes and the cut marker.
    #[error(
        "cap of {cap} tokens on {location} leaves no room for its body: its tag, \
         attributes and cut marker alone cost {minimum} tokens; raise the cap on this chunk \
         (or its tag or kind) to at least {minimum}"
    )]
    CapTooSmall {
        /// Which chunk.
        location: ChunkLocation,
        /// The cap that applied to it (after raising to the floor).
        cap: usize,
        /// The smallest cap the chunk can be cut to.
        minimum: usize,
    },
    /// A cap names a kind or tag that no chunk can have.
    #[error(
        "unknown cap target {name:?}: expected a kind ({}) or a tag ({})",
        kinds.join(", "),
        tags.join(", ")
    )]
    UnknownCapTarget {
        /// The name given.
        name: String,
        /// The kinds a cap may name.
        kinds: Vec<String>,
        /// The tags a cap may name: the default table's and those of
        /// registered custom renderers.
        tags: Vec<String>,
    },
    /// The protected content alone does not fit the budget.
    #[error(
        "budget exceeded: protected content needs {required} tokens but only {available} are \
         available (max_tokens {max_tokens} - reserve_output {reserve_output}); raise max_tokens \
         (--max-tokens), lower reserve_output (--reserve), or shorten the protected content \
         (system prompt, system, pinned and critical chunks, the latest user turn and what \
         follows it)"
    )]
    BudgetExceeded {
        /// Tokens the protected content needs, framing included.
        required: usize,
        /// Tokens available for the prompt (`max_tokens - reserve_output`).
        available: usize,
        /// The prompt budget.
        max_tokens: usize,
        /// Tokens held back for the reply.
        reserve_output: usize,
    },
    /// The tokenizer failed to load.
    #[error("tokenizer `{encoding}` failed to load: {message}")]
    Tokenizer {
        /// The encoding's name.
        encoding: String,
        /// The underlying error, as text (tiktoken-rs reports `anyhow` errors).
        message: String,
    },
    /// A fragment or a data value cannot be read or rendered: a malformed
    /// fragment, nesting deeper than [`format::MAX_DEPTH`](crate::format::MAX_DEPTH).
    #[error("invalid structured context at `{path}`: {message}")]
    Fragment {
        /// Where: `fragments[2].data[0].name` when reading JSON, the chain of
        /// names and indices (`config.database.hosts[3]`) when rendering.
        path: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// Reading input or writing output failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being read or written.
        context: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// How an error message names the type of a JSON value ("an array", …).
pub(crate) fn json_type_name(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
