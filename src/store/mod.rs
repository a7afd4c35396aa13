//! Durable chats: the [`Store`] trait a database implements, and
//! [`SqliteStore`], the embedded backend.
//!
//! A chat is a graph of chunks. Each stored chunk is a *node* with a parent
//! (the chunk before it), so a branch is only a name for its last node, its
//! *head*, and its chunks are the path from the root to that head. Nodes are
//! never edited: a save adds nodes and moves one head, so a writer whose
//! view is stale is told by the head it expected ([`ErrorKind::Conflict`]),
//! whatever the other writer did. Checkpoints name nodes too.
//!
//! A store keeps the chunks as the session JSON writes them (the *codec*,
//! versioned by [`CHUNK_CODEC`]) and, beside each, its exact token counts
//! under the rendering settings they were counted with (opaque text to the
//! store; see [`CountRecord`]), so a fresh process plans a long chat without
//! tokenizing it again.
//!
//! Every operation names its chat, and every query a backend runs is scoped
//! by it and takes all values as parameters: ids of any content are data.
//!
//! The verbs are written once, over a crate-private trait of transactions
//! and statements (`backend`): `verbs` (chats, branches, checkpoints,
//! reads), `save` (conflicts, new nodes' links and tallies, pruning,
//! counts) and `migrate` (the order of migrations, jumps for old stores).
//! Each backend (`sqlite`, `postgres`) keeps its connection, its schema
//! and one statement per primitive.

mod backend;
mod errors;
mod lineage;
mod migrate;
#[cfg(feature = "postgres")]
mod postgres;
mod save;
mod sqlite;
mod tally;
mod verbs;

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::error::{ErrorKind, Result};

pub use crate::roles::ChunkClass;
#[cfg(feature = "postgres")]
pub use postgres::{DEFAULT_POOL_SIZE, DEFAULT_SCHEMA, PostgresStore};
pub use sqlite::SqliteStore;
pub use tally::{CLASSES, ChunkMeta, ClassTally, PathSummary, SIZES, TokenTally};

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
pub type NodeId = i64;

/// The version of the chunk codec: the chunk JSON of the session format.
/// A store keeps it beside every chunk, so a chunk written by a later
/// version of this crate is refused with a clear error instead of misread.
pub const CHUNK_CODEC: u32 = 1;

/// The branch every chat starts with.
pub const MAIN_BRANCH: &str = "main";

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

/// A stored chunk, as [`Store::read_back`] and [`Store::load`] return it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredChunk {
    /// Its node.
    pub node: NodeId,
    /// The node before it (`None` for the first chunk of a chat).
    pub parent: Option<NodeId>,
    /// Its position on every branch that holds it: 0 for the first chunk.
    pub position: usize,
    /// The codec its JSON was written with.
    pub codec: u32,
    /// The chunk as the session JSON writes it.
    pub json: String,
    /// Its counts under the key [`Store::load`] asked for, if stored.
    pub counts: Option<String>,
}

/// Where a branch stands, without its chunks: its head, its length and
/// the chat's system lane.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BranchHead {
    /// The branch's name.
    pub branch: String,
    /// Its head, which a [`Save`] of this view must expect.
    pub head: Option<NodeId>,
    /// How many chunks it holds.
    pub chunks: usize,
    /// The chat's system prompt, fragments and `context_management`, as
    /// [`Save::system`] wrote them.
    pub system: Option<String>,
    /// The system lane's version, which a [`Save`] that writes it must
    /// expect: 0 until first written, then one more per write.
    pub system_version: u64,
}

/// A branch's content: its head, the chat's system lane and the chunks on
/// the path to the head, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoadedBranch {
    /// The branch's name.
    pub branch: String,
    /// Its head, which a [`Save`] of this view must expect.
    pub head: Option<NodeId>,
    /// The chat's system prompt, fragments and `context_management`, as
    /// [`Save::system`] wrote them.
    pub system: Option<String>,
    /// The system lane's version, which a [`Save`] that writes it must
    /// expect: 0 until first written, then one more per write.
    pub system_version: u64,
    /// The chunks, oldest first.
    pub chunks: Vec<StoredChunk>,
}

/// What [`Store::nodes_with`] looks nodes up by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKey<'a> {
    /// The id of the chunk a node holds.
    ChunkId(&'a str),
    /// The call id of the tool call or result a node holds.
    CallId(&'a str),
}

/// A chunk's counts under one set of rendering settings: `key` names the
/// settings (encoding, escaping, renderer version), `value` holds the
/// counts. Both are opaque to a store, which keeps at most one value per
/// node and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountRecord {
    /// The rendering settings.
    pub key: String,
    /// The counts.
    pub value: String,
    /// The chunk's tokens alone, which the path's [`TokenTally`] adds up.
    pub tokens: u64,
}

/// A chunk to store.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NewChunk {
    /// The chunk's id (kept beside the JSON to look chunks up).
    pub chunk_id: String,
    /// The JSON, written with [`CHUNK_CODEC`].
    pub json: String,
    /// Its counts, if known.
    pub counts: Option<CountRecord>,
    /// What the path's tallies need of it.
    pub meta: ChunkMeta,
}

impl NewChunk {
    /// A chunk to store, with its counts if known.
    pub fn new(chunk_id: String, json: String, counts: Option<CountRecord>) -> Self {
        NewChunk {
            chunk_id,
            json,
            counts,
            meta: ChunkMeta::default(),
        }
    }

    /// The same chunk, with what the path's tallies need of it.
    pub fn with_meta(mut self, meta: ChunkMeta) -> Self {
        self.meta = meta;
        self
    }
}

/// One atomic change to a branch: new chunks hung under `parent`, which
/// become the branch's head, and the chat's system lane. A store writes
/// all of it or nothing, and nothing at all unless the branch's head is
/// still `expected_head`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Save {
    /// The branch to move.
    pub branch: String,
    /// The head the writer last saw.
    pub expected_head: Option<NodeId>,
    /// The node the new chunks follow: the head to append, an earlier node
    /// to replace what follows it (`None`: the root).
    pub parent: Option<NodeId>,
    /// The chunks, oldest first; the last becomes the head. With none, the
    /// head does not move.
    pub chunks: Vec<NewChunk>,
    /// The first node the new chunks stand in for, when they replace the
    /// path from it to the head: once no branch or checkpoint reaches it,
    /// it and the nodes below it are deleted.
    pub replaces: Option<NodeId>,
    /// The chat's new system lane, if it changed.
    pub system: Option<String>,
    /// The system lane's version the writer last saw; checked only when
    /// `system` is written.
    pub expected_system_version: u64,
}

impl Save {
    /// A save of `chunks` appended to `branch`, whose head the writer saw
    /// at `head`.
    pub fn append(branch: &str, head: Option<NodeId>, chunks: Vec<NewChunk>) -> Self {
        Save {
            branch: branch.to_owned(),
            expected_head: head,
            parent: head,
            chunks,
            replaces: None,
            system: None,
            expected_system_version: 0,
        }
    }

    /// The same save, replacing the path from `node` to the head: the new
    /// chunks hang under `parent`, the replaced node's parent.
    pub fn replacing(mut self, node: NodeId, parent: Option<NodeId>) -> Self {
        self.replaces = Some(node);
        self.parent = parent;
        self
    }

    /// The same save, writing the chat's system lane too, whose version
    /// the writer saw at `expected_version`.
    pub fn with_system(mut self, system: String, expected_version: u64) -> Self {
        self.system = Some(system);
        self.expected_system_version = expected_version;
        self
    }
}

/// What a save wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Saved {
    /// The branch's head now.
    pub head: Option<NodeId>,
    /// The nodes of the new chunks, in order.
    pub nodes: Vec<NodeId>,
    /// The system lane's version now.
    pub system_version: u64,
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

/// A database of durable chats. [`SqliteStore`] is the embedded default;
/// a server database implements the same operations.
///
/// A backend must make each method one transaction, scope every query by
/// its `chat`, and pass every value as a parameter. [`save`](Store::save)
/// must serialize with every other save to the same chat (from any
/// process) and refuse, writing nothing, when the branch's head or the
/// system lane's version is not the one expected.
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

    /// Where the branch stands: its head, its length and the system lane,
    /// read without reading its chunks.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chat`] if the chat or branch does not exist.
    fn head(&self, chat: &str, branch: &str) -> Result<BranchHead>;

    /// Up to `limit` chunks from node `from` back towards the root, newest
    /// first (`from` itself first), each with its counts under `count_key`
    /// when given and stored; none if `from` is not a node of the chat.
    /// Its cost grows with `limit`, not with the chat.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Store`] if the database fails.
    fn read_back(
        &self,
        chat: &str,
        from: NodeId,
        limit: usize,
        count_key: Option<&str>,
    ) -> Result<Vec<StoredChunk>>;

    /// The ancestor of `node` (or `node` itself) at `position`, found in
    /// O(log n) steps; `None` if `position` is past `node` or `node` is not
    /// a node of the chat.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Store`] if the database fails.
    fn ancestor(&self, chat: &str, node: NodeId, position: usize) -> Result<Option<NodeId>>;

    /// The nodes of the chat (on any branch) found by `key` through an
    /// index, at a position up to `max_position`, newest first: each with
    /// its position and whether it is a tool call.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Store`] if the database fails.
    fn nodes_with(
        &self,
        chat: &str,
        key: NodeKey<'_>,
        max_position: usize,
    ) -> Result<Vec<(NodeId, usize, bool)>>;

    /// The nodes of the tool unit `call_id` (its call and results) on the
    /// path to `head` at or before `max_position`, newest first.
    ///
    /// # Errors
    ///
    /// As [`ancestor`](Store::ancestor).
    fn unit_on_path(
        &self,
        chat: &str,
        head: NodeId,
        call_id: &str,
        max_position: usize,
    ) -> Result<Vec<(NodeId, usize, bool)>> {
        let mut members = Vec::new();
        for (node, position, call) in
            self.nodes_with(chat, NodeKey::CallId(call_id), max_position)?
        {
            if self.ancestor(chat, head, position)? == Some(node) {
                members.push((node, position, call));
            }
        }
        Ok(members)
    }

    /// The position of the tool call `call_id` on the path to `head` at or
    /// before `max_position`, if there is one. Its cost does not grow with
    /// the chat.
    ///
    /// # Errors
    ///
    /// As [`ancestor`](Store::ancestor).
    fn find_call(
        &self,
        chat: &str,
        head: NodeId,
        call_id: &str,
        max_position: usize,
    ) -> Result<Option<usize>> {
        for (node, position, call) in
            self.nodes_with(chat, NodeKey::CallId(call_id), max_position)?
        {
            if call && self.ancestor(chat, head, position)? == Some(node) {
                return Ok(Some(position));
            }
        }
        Ok(None)
    }

    /// The chunk `chunk_id` on the path to `head`, if there is one: the
    /// nodes holding that id, each checked to be `head`'s ancestor at its
    /// position. Its cost does not grow with the chat.
    ///
    /// # Errors
    ///
    /// As [`read_back`](Store::read_back).
    fn find_chunk(&self, chat: &str, head: NodeId, chunk_id: &str) -> Result<Option<StoredChunk>> {
        let Some(last) = self.read_back(chat, head, 1, None)?.pop() else {
            return Ok(None);
        };
        let key = NodeKey::ChunkId(chunk_id);
        for (node, position, _) in self.nodes_with(chat, key, last.position)? {
            if self.ancestor(chat, head, position)? == Some(node) {
                return Ok(self.read_back(chat, node, 1, None)?.pop());
            }
        }
        Ok(None)
    }

    /// Calls `each` with the chunks on the path to `head`, oldest first, a
    /// page at a time: memory does not grow with the chat.
    ///
    /// # Errors
    ///
    /// As [`read_back`](Store::read_back); [`ErrorKind::Chat`] if another
    /// writer replaced chunks of the path while it was read (read it
    /// again); the first error of `each`, which stops the walk.
    fn for_each_chunk(
        &self,
        chat: &str,
        head: Option<NodeId>,
        count_key: Option<&str>,
        each: &mut dyn FnMut(StoredChunk) -> Result<()>,
    ) -> Result<()> {
        const PAGE: usize = 512;
        let Some(head) = head else {
            return Ok(());
        };
        let Some(newest) = self.read_back(chat, head, 1, None)?.pop() else {
            return Ok(());
        };
        let mut start = 0;
        while start <= newest.position {
            let end = (start + PAGE - 1).min(newest.position);
            let wanted = end - start + 1;
            let page = match self.ancestor(chat, head, end)? {
                Some(last) => self.read_back(chat, last, wanted, count_key)?,
                None => Vec::new(),
            };
            if page.len() != wanted {
                return Err(errors::chat_error(
                    chat,
                    "the branch changed while it was read (another writer replaced its newest \
                     chunks); read it again"
                        .into(),
                ));
            }
            page.into_iter().rev().try_for_each(&mut *each)?;
            start = end + 1;
        }
        Ok(())
    }

    /// The branch's head, the system lane and the chunks to the head, each
    /// with its counts under `count_key` when given and stored. Reads the
    /// whole branch: [`head`](Store::head) and
    /// [`read_back`](Store::read_back) read what a verb needs.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chat`] if the chat or branch does
    /// not exist.
    fn load(&self, chat: &str, branch: &str, count_key: Option<&str>) -> Result<LoadedBranch> {
        let head = self.head(chat, branch)?;
        let mut chunks = Vec::with_capacity(head.chunks);
        self.for_each_chunk(chat, head.head, count_key, &mut |chunk| {
            chunks.push(chunk);
            Ok(())
        })?;
        Ok(LoadedBranch {
            branch: head.branch,
            head: head.head,
            system: head.system,
            system_version: head.system_version,
            chunks,
        })
    }

    /// Writes `save` in one transaction.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Conflict`] if the branch's
    /// head is not `save.expected_head`, [`ErrorKind::SystemConflict`]
    /// if it writes the system lane and its version is not
    /// `save.expected_system_version`; [`ErrorKind::Chat`]
    /// if the chat or branch does not exist. Either way nothing is written.
    fn save(&self, chat: &str, save: &Save) -> Result<Saved>;

    /// Stores counts of stored nodes under `key` (`(node, counts, tokens
    /// alone)`, parents before children), keeping any already there.
    ///
    /// # Errors
    ///
    /// As [`open_chat`](Store::open_chat).
    fn put_counts(&self, chat: &str, key: &str, counts: &[(NodeId, String, u64)]) -> Result<()>;

    /// What the store knows of the path to `node` (see [`PathSummary`]),
    /// its tokens under `count_key`; `None` if `node` is not a node of the
    /// chat.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Store`] if the database fails.
    fn path_summary(
        &self,
        chat: &str,
        node: NodeId,
        count_key: &str,
    ) -> Result<Option<PathSummary>>;

    /// The chat's branches, by name.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chat`] if the chat does not exist.
    fn branches(&self, chat: &str) -> Result<Vec<BranchSummary>>;

    /// Creates a branch whose head is `head` (a node of the chat, or `None`
    /// for an empty branch), and with `switch` makes it the active branch
    /// in the same transaction.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chat`] if the name is taken or
    /// empty, or `head` is not a node of the chat.
    fn create_branch(
        &self,
        chat: &str,
        name: &str,
        head: Option<NodeId>,
        switch: bool,
    ) -> Result<()>;

    /// Makes `name` the chat's active branch.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chat`] if there is no such branch.
    fn switch_branch(&self, chat: &str, name: &str) -> Result<()>;

    /// Names `node` as checkpoint `name`, moving the name if it exists.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chat`] if the name is empty or
    /// `node` is not a node of the chat.
    fn set_checkpoint(&self, chat: &str, name: &str, node: Option<NodeId>) -> Result<()>;

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
}
