//! The node-level operations a chat's engine is made of: where a branch
//! stands, reading back from a node, finding chunks and tool units by id
//! through an index, saving, counts and tallies, branches and checkpoints.
//!
//! A [`Store`](super::Store) hands them out only for a [`Token`], which no
//! code outside this crate can make: so only the crate calls them, and
//! only the crate's own backends implement `Store`. The rules they keep (conflicts,
//! pruning, tallies) are written once, in `verbs` and `save`, for every
//! [`Backend`].

use super::backend::{Backend, Tx};
use super::errors;
use super::records::{BranchHead, LoadedBranch, NodeKey, Save, Saved, StoredChunk};
use super::tally::PathSummary;
use super::{NodeId, verbs};
#[cfg(doc)]
use crate::error::ErrorKind;
use crate::error::Result;

/// What a store asks for its node-level operations: a value only this
/// crate can make.
#[derive(Debug, Clone, Copy)]
pub struct Token(());

/// The token the crate's own code shows.
pub(crate) const TOKEN: Token = Token(());

/// A store's node-level operations (see the module's docs).
pub trait Nodes {
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

    /// The chunks of `nodes`, by position, each with its counts under
    /// `count_key` when given and stored: one read whatever their number.
    /// Ids that are no nodes of the chat are left out.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Store`] if the database fails.
    fn read_nodes(
        &self,
        chat: &str,
        nodes: &[NodeId],
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
    /// As [`ancestor`](Nodes::ancestor).
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
    /// As [`ancestor`](Nodes::ancestor).
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
    /// As [`read_back`](Nodes::read_back).
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
    /// As [`read_back`](Nodes::read_back); [`ErrorKind::Chat`] if another
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
    /// whole branch: [`head`](Nodes::head) and
    /// [`read_back`](Nodes::read_back) read what a verb needs.
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
    /// As [`open_chat`](super::Store::open_chat).
    fn put_counts(&self, chat: &str, key: &str, counts: &[(NodeId, String, u64)]) -> Result<()>;

    /// What the store knows of the path to `node` (see `PathSummary`),
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

    /// The record of the last build of `branch`, as the engine wrote it
    /// (see `engine::record`), if there is one.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Store`] if the database fails.
    fn last_build(&self, chat: &str, branch: &str) -> Result<Option<String>>;

    /// Replaces the record of the last build of `branch`, made at a head of
    /// `chunks` chunks: one small write, in a transaction of its own. The
    /// last writer's record stands, unless the one there was made at a
    /// longer head (by a runtime that saw chunks this one has not).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Store`] if the database fails or is read-only.
    fn keep_last_build(&self, chat: &str, branch: &str, chunks: usize, record: &str) -> Result<()>;
}

impl<B: Backend> Nodes for B {
    fn head(&self, chat: &str, branch: &str) -> Result<BranchHead> {
        verbs::head(self, chat, branch)
    }
    fn read_back(
        &self,
        chat: &str,
        from: NodeId,
        limit: usize,
        count_key: Option<&str>,
    ) -> Result<Vec<StoredChunk>> {
        verbs::read_back(self, chat, from, limit, count_key)
    }
    fn read_nodes(
        &self,
        chat: &str,
        nodes: &[NodeId],
        count_key: Option<&str>,
    ) -> Result<Vec<StoredChunk>> {
        if nodes.is_empty() {
            return Ok(Vec::new());
        }
        let mut chunks = self.read(|tx| tx.read_nodes(chat, nodes, count_key))?;
        chunks.sort_by_key(|c| c.position);
        Ok(chunks)
    }
    fn ancestor(&self, chat: &str, node: NodeId, position: usize) -> Result<Option<NodeId>> {
        verbs::ancestor(self, chat, node, position)
    }
    fn nodes_with(
        &self,
        chat: &str,
        key: NodeKey<'_>,
        max_position: usize,
    ) -> Result<Vec<(NodeId, usize, bool)>> {
        verbs::nodes_with(self, chat, key, max_position)
    }
    fn save(&self, chat: &str, save: &Save) -> Result<Saved> {
        verbs::save(self, chat, save)
    }
    fn put_counts(&self, chat: &str, key: &str, counts: &[(NodeId, String, u64)]) -> Result<()> {
        verbs::put_counts(self, chat, key, counts)
    }
    fn path_summary(
        &self,
        chat: &str,
        node: NodeId,
        count_key: &str,
    ) -> Result<Option<PathSummary>> {
        verbs::path_summary(self, chat, node, count_key)
    }
    fn create_branch(
        &self,
        chat: &str,
        name: &str,
        head: Option<NodeId>,
        switch: bool,
    ) -> Result<()> {
        verbs::create_branch(self, chat, name, head, switch)
    }
    fn switch_branch(&self, chat: &str, name: &str) -> Result<()> {
        verbs::switch_branch(self, chat, name)
    }
    fn set_checkpoint(&self, chat: &str, name: &str, node: Option<NodeId>) -> Result<()> {
        verbs::set_checkpoint(self, chat, name, node)
    }
    fn last_build(&self, chat: &str, branch: &str) -> Result<Option<String>> {
        self.read(|tx| tx.last_build(chat, branch))
    }
    fn keep_last_build(&self, chat: &str, branch: &str, chunks: usize, record: &str) -> Result<()> {
        let chunks = i64::try_from(chunks).unwrap_or(i64::MAX);
        self.write(|tx| tx.put_last_build(chat, branch, chunks, record))
    }
}
