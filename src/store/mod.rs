//! Durable chats: the [`Store`] a [`ContextEngine`](crate::ContextEngine)
//! keeps its chats in, [`SqliteStore`] (embedded) or `PostgresStore`
//! (feature `postgres`), opened by [`open`].
//!
//! A chat is a graph of chunks. Each stored chunk is a *node* with a parent
//! (the chunk before it), so a branch is only a name for its last node, its
//! *head*, and its chunks are the path from the root to that head. Nodes are
//! never edited: a save adds nodes and moves one head, so a writer whose
//! view is stale is told by the head it expected ([`ErrorKind::Conflict`]),
//! whatever the other writer did. Checkpoints name nodes too.
//!
//! A store keeps the chunks as the session JSON writes them (the *codec*,
//! versioned, so a chunk written by a later version of this crate is refused
//! instead of misread) and, beside each, its exact token counts under the
//! rendering settings they were counted with (opaque text to the store), so
//! a fresh process plans a long chat without tokenizing it again.
//!
//! Every operation names its chat, and every query a backend runs is scoped
//! by it and takes all values as parameters: ids of any content are data.
//!
//! [`Store`] is sealed (its docs say why). The verbs are written once,
//! over a crate-private trait of transactions and statements (`backend`):
//! `verbs` (chats, branches, checkpoints, reads), `save` (conflicts, new
//! nodes' links and tallies, pruning, counts) and `migrate` (the order of migrations, jumps for old stores).
//! Each backend (`sqlite`, `postgres`) keeps its connection, its schema
//! and one statement per primitive.

mod backend;
mod errors;
mod lineage;
mod migrate;
mod nodes;
#[cfg(feature = "postgres")]
mod postgres;
mod records;
mod save;
mod sqlite;
mod tally;
#[cfg(test)]
mod tests;
mod verbs;

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::error::{ErrorKind, Result};
use backend::Backend;

pub(crate) use nodes::{Nodes, TOKEN, Token};
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
pub(crate) use records::{
    BranchHead, CHUNK_CODEC, CountRecord, NewChunk, NodeKey, Save, Saved, StoredChunk,
};
pub use sqlite::SqliteStore;
pub(crate) use tally::{ChunkMeta, ClassTally, PathSummary, SIZES, TokenTally};

/// What the node-level operations write, for the crate's benchmarks (which
/// time a save without the engine): not part of the API.
#[cfg(feature = "bench")]
#[doc(hidden)]
pub mod raw {
    pub use crate::store::nodes::Nodes;
    pub use crate::store::records::{NewChunk, Save};

    /// The node-level operations of `store`.
    pub fn nodes(store: &dyn crate::store::Store) -> &dyn Nodes {
        store.nodes(crate::store::TOKEN)
    }
}

/// Whether `location` names a PostgreSQL server rather than a file:
/// it starts with `postgres://` or `postgresql://`.
pub(crate) fn is_postgres_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// Opens the store `location` names: a PostgreSQL URL (one that starts
/// with `postgres://` or `postgresql://`) is a `PostgresStore` (built with the `postgres`
/// feature), anything else the path of a [`SqliteStore`] file. Without
/// `create`, a store that does not exist yet is an error, and nothing is
/// created.
///
/// # Errors
///
/// [`ErrorKind::Option`] (option `db`) for a URL that cannot be read, a
/// PostgreSQL URL in a build without the `postgres` feature, or a missing
/// store without `create`; [`ErrorKind::NotAStore`] for an empty path or
/// one that names a directory, a device, a FIFO, a socket or a file in a
/// directory that does not exist, before anything is created (see
/// [`SqliteStore::open`]); otherwise as the backend's `open`.
pub fn open(location: &str, create: bool) -> Result<Arc<dyn Store>> {
    if is_postgres_url(location) {
        return open_postgres(location, create);
    }
    sqlite::check_path(Path::new(location))?;
    if !create && !Path::new(location).exists() {
        return Err(ErrorKind::Option {
            option: "db".into(),
            message: format!(
                "no store at {location:?}; open it with `create` to make one, or name an \
                 existing store"
            ),
        }
        .into());
    }
    Ok(Arc::new(SqliteStore::open(location)?))
}

#[cfg(feature = "postgres")]
fn open_postgres(url: &str, create: bool) -> Result<Arc<dyn Store>> {
    Ok(Arc::new(match create {
        true => PostgresStore::open(url)?,
        false => PostgresStore::open_existing(url)?,
    }))
}

#[cfg(not(feature = "postgres"))]
fn open_postgres(_url: &str, _create: bool) -> Result<Arc<dyn Store>> {
    Err(ErrorKind::Option {
        option: "db".into(),
        message: "this build has no PostgreSQL store: build agent-context with `--features \
                  postgres`, or give the path of a SQLite file"
            .into(),
    }
    .into())
}

/// Milliseconds since the Unix epoch, as stores keep times.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A node's id: unique in its store and never reused, so a head seen once
/// names the same node for as long as it exists.
pub(crate) type NodeId = i64;

/// The branch every chat starts with.
pub(crate) const MAIN_BRANCH: &str = "main";

/// A chat as [`Store::chats`] lists it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChatSummary {
    /// The chat's id.
    pub id: String,
    /// Free JSON the caller attached (an object; `{}` unless set).
    pub metadata: Value,
    /// The branch an engine opens unless told otherwise.
    pub active_branch: String,
    /// When the chat was created, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// When a save last changed it, in milliseconds since the Unix epoch.
    pub updated_at_ms: i64,
}

/// A branch as [`Store::branches`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BranchSummary {
    /// The branch's name.
    pub name: String,
    /// Its last node (`None` while it is empty).
    pub head: Option<NodeId>,
    /// How many chunks it holds: the length of the path to its head.
    pub chunks: usize,
    /// Whether it is the chat's active branch.
    pub active: bool,
}

/// A checkpoint: a name for a node of the chat.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckpointSummary {
    /// The checkpoint's name.
    pub name: String,
    /// The node it names (`None`: taken on an empty branch).
    pub node: Option<NodeId>,
}

/// What a provider billed for one request of a chat.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Usage {
    /// The model the request went to.
    pub model: String,
    /// Input tokens billed (with any cache reads and writes).
    pub input_tokens: u64,
    /// Output tokens billed.
    pub output_tokens: u64,
    /// The prompt's `o200k_base` count, when it was estimated: what
    /// calibration learns from (see [`Calibration`](crate::tokens::Calibration)).
    pub base_tokens: Option<u64>,
}

/// A database of durable chats: [`SqliteStore`], the embedded default, or
/// `PostgresStore` (feature `postgres`), both
/// opened by [`open`] and handed to a [`ContextEngine`](crate::ContextEngine),
/// which reads and writes a chat through it.
///
/// The trait is sealed: its node-level half (reading back from a node,
/// saving, counts and the tallies that let a fresh process read only a
/// build's window) is the crate's own, handed out only for a token no code
/// outside the crate can make, and only the crate's backends implement
/// it. Those operations keep invariants a backend written
/// elsewhere could break silently (a save is atomic and refuses a stale
/// head, tallies chain from parent to child, queries are scoped by chat),
/// and they change whenever the engine needs one more; what is public are
/// the chat-level verbs a runtime calls on a store directly.
pub trait Store: Send + Sync + std::fmt::Debug {
    /// Where the store is, for messages: a path, `:memory:`, a server.
    fn location(&self) -> String;

    /// The chat, created with an empty `main` branch (active) if missing.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chat`] if `chat` is empty (nothing is created);
    /// [`ErrorKind::Store`] if the database fails.
    fn open_chat(&self, chat: &str) -> Result<ChatSummary>;

    /// The chat, if it exists.
    ///
    /// # Errors
    ///
    /// As [`open_chat`](Store::open_chat).
    fn chat(&self, chat: &str) -> Result<Option<ChatSummary>>;

    /// Every chat, by id.
    ///
    /// # Errors
    ///
    /// As [`open_chat`](Store::open_chat).
    fn chats(&self) -> Result<Vec<ChatSummary>>;

    /// Replaces the chat's metadata.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chat`] if the chat does not exist.
    fn set_metadata(&self, chat: &str, metadata: &Value) -> Result<()>;

    /// The chat's branches, by name.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chat`] if the chat does not exist.
    fn branches(&self, chat: &str) -> Result<Vec<BranchSummary>>;

    /// The chat's checkpoints, by name.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chat`] if the chat does not exist.
    fn checkpoints(&self, chat: &str) -> Result<Vec<CheckpointSummary>>;

    /// Records what a provider billed for a request of the chat.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chat`] if the chat does not exist.
    fn record_usage(&self, chat: &str, usage: &Usage) -> Result<()>;

    /// Every usage recorded for the chat, oldest first.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chat`] if the chat does not exist.
    fn usage(&self, chat: &str) -> Result<Vec<Usage>>;

    /// The node-level operations, for the crate's own code.
    #[doc(hidden)]
    fn nodes(&self, token: Token) -> &dyn Nodes;
}

impl<B: Backend> Store for B {
    fn location(&self) -> String {
        Backend::location(self).to_owned()
    }
    fn open_chat(&self, chat: &str) -> Result<ChatSummary> {
        verbs::open_chat(self, chat)
    }
    fn chat(&self, chat: &str) -> Result<Option<ChatSummary>> {
        verbs::chat(self, chat)
    }
    fn chats(&self) -> Result<Vec<ChatSummary>> {
        verbs::chats(self)
    }
    fn set_metadata(&self, chat: &str, metadata: &Value) -> Result<()> {
        verbs::set_metadata(self, chat, metadata)
    }
    fn branches(&self, chat: &str) -> Result<Vec<BranchSummary>> {
        verbs::branches(self, chat)
    }
    fn checkpoints(&self, chat: &str) -> Result<Vec<CheckpointSummary>> {
        verbs::checkpoints(self, chat)
    }
    fn record_usage(&self, chat: &str, usage: &Usage) -> Result<()> {
        verbs::record_usage(self, chat, usage)
    }
    fn usage(&self, chat: &str) -> Result<Vec<Usage>> {
        verbs::usage(self, chat)
    }
    fn nodes(&self, _: Token) -> &dyn Nodes {
        self
    }
}
