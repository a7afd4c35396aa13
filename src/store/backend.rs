//! What a database must do for the store's verbs: run a transaction, and
//! inside one, the statements the verbs are made of.
//!
//! The verbs themselves (what a save checks, in what order it reads and
//! writes, when a replaced path is pruned, how counts chain their tallies)
//! are written once, in `store::verbs` and `store::save`, over these
//! primitives. A backend keeps its connection, its schema and one
//! statement per primitive, and nothing of the rules: each primitive reads
//! or writes what its name says and reports no domain error, only the
//! database's.

use super::lineage::Link;
use super::tally::{NodeTallies, TokenTally};
use super::{CheckpointSummary, NewChunk, NodeId, NodeKey, StoredChunk, Usage};
use crate::error::Result;

/// A database the verbs run on: its transactions.
pub(crate) trait Backend: Send + Sync + std::fmt::Debug {
    /// A transaction of this database.
    type Tx<'a>: Tx
    where
        Self: 'a;

    /// Where the store is, for messages.
    fn location(&self) -> &str;

    /// Runs `work` on one consistent snapshot, writing nothing.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Store`](crate::ErrorKind::Store) if the database
    /// fails; the error of `work`.
    fn read<T>(&self, work: impl FnOnce(&mut Self::Tx<'_>) -> Result<T>) -> Result<T>;

    /// Runs `work` in one transaction, committed if it succeeds. Writes to
    /// one chat take turns once [`Tx::lock_chat`] has run.
    ///
    /// # Errors
    ///
    /// As [`read`](Backend::read).
    fn write<T>(&self, work: impl FnOnce(&mut Self::Tx<'_>) -> Result<T>) -> Result<T>;
}

/// The statements of one transaction. Every one is scoped by its chat
/// where it names one, and fails only with the database's error.
pub(crate) trait Tx {
    /// Creates the chat with `branch` active, unless it exists; whether it
    /// was created.
    fn insert_chat(&mut self, chat: &str, branch: &str, now: i64) -> Result<bool>;

    /// The chat's row, if it exists.
    fn chat_row(&mut self, chat: &str) -> Result<Option<ChatRow>>;

    /// Every chat's row, by id.
    fn chat_rows(&mut self) -> Result<Vec<ChatRow>>;

    /// Makes other writers to the chat wait until this transaction ends;
    /// the chat's system lane version, `None` if there is no such chat.
    fn lock_chat(&mut self, chat: &str) -> Result<Option<u64>>;

    /// The chat's system lane and its version, `None` if there is no such
    /// chat.
    fn system_lane(&mut self, chat: &str) -> Result<Option<(Option<String>, u64)>>;

    /// Replaces the chat's metadata (JSON text).
    fn set_metadata(&mut self, chat: &str, metadata: &str, now: i64) -> Result<()>;

    /// Marks the chat changed at `now`, writing its system lane (one
    /// version more) when `system` is given.
    fn touch(&mut self, chat: &str, system: Option<&str>, now: i64) -> Result<()>;

    /// Makes `branch` the chat's active branch.
    fn set_active(&mut self, chat: &str, branch: &str, now: i64) -> Result<()>;

    /// The head of `branch`: `None` if there is no such branch, `Some(None)`
    /// if it is empty.
    fn branch_head(&mut self, chat: &str, branch: &str) -> Result<Option<Option<NodeId>>>;

    /// Creates branch `name` at `head`.
    fn insert_branch(&mut self, chat: &str, name: &str, head: Option<NodeId>) -> Result<()>;

    /// Moves the head of `branch`.
    fn set_head(&mut self, chat: &str, branch: &str, head: Option<NodeId>) -> Result<()>;

    /// The chat's branches by name: each with its head and its length.
    fn branch_rows(&mut self, chat: &str) -> Result<Vec<(String, Option<NodeId>, usize)>>;

    /// Names `node` as checkpoint `name`, moving the name if it exists.
    fn set_checkpoint(&mut self, chat: &str, name: &str, node: Option<NodeId>) -> Result<()>;

    /// The chat's checkpoints, by name.
    fn checkpoints(&mut self, chat: &str) -> Result<Vec<CheckpointSummary>>;

    /// The record of the last build of `branch` (see `engine::record`).
    fn last_build(&mut self, chat: &str, branch: &str) -> Result<Option<String>>;

    /// Replaces the record of the last build of `branch`, made at a head of
    /// `chunks` chunks, unless the record there was made at a longer one.
    fn put_last_build(&mut self, chat: &str, branch: &str, chunks: i64, record: &str)
    -> Result<()>;

    /// Records `usage` of the chat at `now`.
    fn insert_usage(&mut self, chat: &str, usage: &Usage, now: i64) -> Result<()>;

    /// The chat's usage, oldest first.
    fn usage(&mut self, chat: &str) -> Result<Vec<Usage>>;

    /// The position of `node`, `None` if it is not a node of the chat.
    fn position_of(&mut self, chat: &str, node: NodeId) -> Result<Option<i64>>;

    /// The chunks of `walk`, newest first (see
    /// [`Nodes::read_back`](super::Nodes::read_back)).
    fn read_back(&mut self, chat: &str, walk: ReadBack<'_>) -> Result<Vec<StoredChunk>>;

    /// The chunks of `nodes` that are nodes of the chat, in any order,
    /// each with its counts under `count_key` when given.
    fn read_nodes(
        &mut self,
        chat: &str,
        nodes: &[NodeId],
        count_key: Option<&str>,
    ) -> Result<Vec<StoredChunk>>;

    /// The ancestor of `node` at `position`, climbing by jumps.
    fn ancestor(&mut self, chat: &str, node: NodeId, position: i64) -> Result<Option<NodeId>>;

    /// The nodes found by `key` at a position up to `up_to`, newest first.
    fn nodes_with(&mut self, chat: &str, key: NodeKey<'_>, up_to: i64) -> Result<Vec<Found>>;

    /// The position and tallies of `node`, and its path's token tally
    /// under `count_key`; `None` if it is not a node of the chat.
    fn path_row(&mut self, chat: &str, node: NodeId, count_key: &str) -> Result<Option<PathRow>>;

    /// The tallies node `node` keeps for its path, if it exists.
    fn tallies(&mut self, node: NodeId) -> Result<Option<NodeTallies>>;

    /// The token tally of the path to `node` under `key`, if it has one.
    fn token_tally(&mut self, node: NodeId, key: &str) -> Result<Option<TokenTally>>;

    /// The links of `node` and of every node its jumps reach, `node`
    /// first; none if it is not a node of the chat.
    fn jump_chain(&mut self, chat: &str, node: NodeId) -> Result<Vec<Link>>;

    /// Draws `count` ids for new nodes, ascending, never given before.
    fn new_node_ids(&mut self, count: usize) -> Result<Vec<NodeId>>;

    /// Inserts `nodes` (parents before children) into the chat.
    fn insert_nodes(&mut self, chat: &str, nodes: &[NodeRow<'_>]) -> Result<()>;

    /// Inserts `counts`, keeping any a node has under the key already.
    fn insert_counts(&mut self, counts: &[CountRow<'_>]) -> Result<()>;

    /// What putting counts under `key` on `nodes` builds on, for those of
    /// them that are nodes of the chat.
    fn count_bases(&mut self, chat: &str, key: &str, nodes: &[NodeId]) -> Result<Vec<CountBase>>;

    /// Whether a branch head or a checkpoint is `node` or a node below it.
    fn reached(&mut self, chat: &str, node: NodeId) -> Result<bool>;

    /// Deletes `node` and every node below it.
    fn delete_below(&mut self, chat: &str, node: NodeId) -> Result<()>;
}

/// A chat's row, its metadata still text.
pub(crate) struct ChatRow {
    pub(crate) id: String,
    pub(crate) metadata: String,
    pub(crate) active_branch: String,
    pub(crate) created_at_ms: i64,
    pub(crate) updated_at_ms: i64,
}

/// A walk from node `from` back towards the root: up to `limit` chunks,
/// each with its counts under `count_key` when given.
#[derive(Clone, Copy)]
pub(crate) struct ReadBack<'a> {
    pub(crate) from: NodeId,
    pub(crate) limit: i64,
    pub(crate) count_key: Option<&'a str>,
}

/// A node found by a key.
pub(crate) struct Found {
    pub(crate) node: NodeId,
    pub(crate) position: usize,
    /// Whether it is a tool call.
    pub(crate) call: bool,
}

/// What the store knows of a node's path, as its row holds it.
pub(crate) struct PathRow {
    pub(crate) position: i64,
    pub(crate) tallies: NodeTallies,
    pub(crate) tokens: Option<TokenTally>,
}

/// A node a save inserts.
pub(crate) struct NodeRow<'a> {
    /// Its id, position and jump.
    pub(crate) link: Link,
    pub(crate) parent: Option<NodeId>,
    pub(crate) chunk: &'a NewChunk,
    pub(crate) tallies: NodeTallies,
}

/// A node's counts under one key, with its path's token tally.
pub(crate) struct CountRow<'a> {
    pub(crate) node: NodeId,
    pub(crate) key: &'a str,
    pub(crate) value: &'a str,
    pub(crate) tally: Option<TokenTally>,
}

/// What a node that counts are put on builds on.
pub(crate) struct CountBase {
    pub(crate) node: NodeId,
    pub(crate) parent: Option<NodeId>,
    /// The parent's token tally under the key.
    pub(crate) parent_tally: Option<TokenTally>,
    /// The node's own, when it has counts under the key already.
    pub(crate) own: Option<Option<TokenTally>>,
}
