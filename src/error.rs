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

/// Where in a JSON document an error sits: the chunk, when it is inside one,
/// and the path below it (or from the root, outside any chunk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPlace {
    /// The chunk of a session the place is in.
    pub chunk: Option<ChunkLocation>,
    /// Keys and indices down to the place (`data.rows[2]`, `fragments[0].data`);
    /// empty for the chunk itself or the top level. Long paths end in `…`.
    pub path: String,
}

impl fmt::Display for JsonPlace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.chunk, self.path.is_empty()) {
            (Some(chunk), true) => write!(f, "in {chunk}"),
            (Some(chunk), false) => write!(f, "in {chunk}, field `{}`", self.path),
            (None, false) => write!(f, "at `{}`", self.path),
            (None, true) => f.write_str("at the top level"),
        }
    }
}

/// Why readable JSON text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JsonProblem {
    /// One object gives a key twice; JSON readers differ on which value wins.
    #[error(
        "key `{key}` is given twice in one object; give each key once (readers differ on which \
         value wins)"
    )]
    DuplicateKey {
        /// The key.
        key: String,
    },
    /// Arrays and objects nest deeper than the reader goes.
    #[error("nested deeper than {limit} levels of arrays and objects; flatten the value")]
    TooDeep {
        /// The deepest nesting read (256 levels).
        limit: usize,
    },
    /// A `\uD800`–`\uDFFF` escape outside a high-then-low pair, as left by
    /// a writer that cut a string inside a character.
    #[error(
        "lone UTF-16 surrogate escape `{escape}` (half of a character, as left by a string cut \
         inside an emoji); fix the writer, or read the input with lossy Unicode to replace it \
         with U+FFFD"
    )]
    LoneSurrogate {
        /// The escape as written, e.g. `\ud83e`.
        escape: String,
    },
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
    /// The input is JSON text that cannot be taken as given: a key twice in
    /// one object, nesting past 256 levels, a lone surrogate escape.
    #[error("invalid JSON at line {line}, column {column}, {place}: {problem}")]
    JsonRejected {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// The chunk and field, or the path from the root.
        place: JsonPlace,
        /// What is wrong and how to fix it.
        problem: JsonProblem,
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
    /// Content blocks break the content schema.
    #[error("invalid content at `{path}`: {message}")]
    Content {
        /// Where, from the root of the content (`$[1].childBlocks[0].type`).
        path: String,
        /// What is wrong.
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
        "cap of {} on {location} leaves no room for its body: its tag, \
         attributes and cut marker alone cost {minimum} tokens; raise the cap on this chunk \
         (or its tool, tag or kind) to at least {minimum}",
        cap_asked(*asked, *cap)
    )]
    CapTooSmall {
        /// Which chunk.
        location: ChunkLocation,
        /// The cap set on it, which may be below the floor.
        asked: usize,
        /// The cap that applied to it (after raising to the floor).
        cap: usize,
        /// The smallest cap the chunk can be cut to.
        minimum: usize,
    },
    /// A cap names a kind or tag that no chunk can have (or is not a name
    /// [`CapTarget::from_name`](crate::budget::CapTarget::from_name) reads).
    #[error(
        "unknown cap target {name:?}: expected a kind ({}) or a tag ({}), or tool:NAME for \
         the chunks of a tool, id:CHUNK for one chunk",
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
         available (max_tokens {max_tokens} - reserve_output {reserve_output}); raise max_tokens, \
         lower reserve_output, or shorten the protected content \
         (system prompt, system, pinned and critical chunks, the latest user message, and the \
         newest tool use with its results cut to 64 tokens each)"
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
        /// What went wrong, as text.
        message: String,
    },
    /// A fragment or a data value cannot be read or rendered: a malformed
    /// fragment, nesting deeper than 64 levels.
    #[error("invalid structured context at `{path}`: {message}")]
    Fragment {
        /// Where: `fragments[2].data[0].name` when reading JSON, the chain of
        /// names and indices (`config.database.hosts[3]`) when rendering.
        path: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A provider's API would reject the built prompt for having no messages
    /// besides the system message.
    #[error(
        "{provider} needs at least one user or assistant message, and the prompt has none: the \
         session has no `agent` turn left to send (add the user's request as an `agent` chunk \
         with role `user`, or stop excluding agent chunks)"
    )]
    EmptyHistory {
        /// The provider, e.g. `Anthropic`.
        provider: String,
    },
    /// A save whose view of the branch is stale: another writer moved the
    /// branch's head since this engine loaded it. Nothing was written.
    #[error(
        "conflict on branch {branch:?} of chat {chat:?}: expected its head at {}, found {}; \
         another writer saved first: reload the chat and apply the change again",
        head_name(*expected),
        head_name(*actual)
    )]
    Conflict {
        /// The chat.
        chat: String,
        /// The branch whose head moved.
        branch: String,
        /// The head the engine loaded (`None`: the branch was empty).
        expected: Option<i64>,
        /// The head the store holds.
        actual: Option<i64>,
    },
    /// A save of the system lane (system prompt and fragments) whose view
    /// is stale: another writer changed it since this engine loaded it.
    /// Nothing was written.
    #[error(
        "conflict on the system prompt and fragments of chat {chat:?}: expected version \
         {expected}, found {actual}; another writer changed them first: reload the chat and \
         apply the change again"
    )]
    SystemConflict {
        /// The chat.
        chat: String,
        /// The version the engine loaded.
        expected: u64,
        /// The version the store holds.
        actual: u64,
    },
    /// A compaction that cannot be planned or applied as asked: a stale or
    /// forged plan, a summary that is empty or no smaller than what it
    /// folds, options that contradict each other. Nothing was written.
    #[error("compaction refused: {message}")]
    Compaction {
        /// Why, and how to fix it.
        message: String,
    },
    /// A chat, branch, checkpoint or chunk that a store operation names does
    /// not exist, or a name to create is taken or invalid.
    #[error("chat {chat:?}: {message}")]
    Chat {
        /// The chat.
        chat: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The database named is no store this version can open: not a
    /// SQLite file, another program's database, or a store written by a
    /// later version. Nothing was changed; name another database (or
    /// upgrade).
    #[error("store {location}: {message}")]
    NotAStore {
        /// The database: a file path or a server.
        location: String,
        /// What it is instead, and how to fix it.
        message: String,
    },
    /// The database behind a store failed, or holds what this version
    /// cannot read.
    #[error("store {location}: {message}")]
    Store {
        /// The database: a file path, `:memory:` or a server.
        location: String,
        /// What went wrong and, where known, how to fix it.
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

impl ErrorKind {
    /// Whether another writer saved first ([`Conflict`](ErrorKind::Conflict)
    /// or [`SystemConflict`](ErrorKind::SystemConflict)): nothing was
    /// written, and reloading and applying the change again is the fix.
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            ErrorKind::Conflict { .. } | ErrorKind::SystemConflict { .. }
        )
    }
}

/// A branch head in a message: its node id, or `empty`.
fn head_name(head: Option<i64>) -> String {
    head.map_or_else(|| "empty".to_owned(), |node| format!("node {node}"))
}

/// `64 tokens`, or `0 tokens (raised to the floor of 64)` when the cap
/// asked for was below the floor: the caller sees the number they set.
fn cap_asked(asked: usize, cap: usize) -> String {
    if asked < cap {
        format!("{asked} tokens (raised to the floor of {cap})")
    } else {
        format!("{cap} tokens")
    }
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
