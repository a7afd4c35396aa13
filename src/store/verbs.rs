//! The store's verbs, written once for every backend: which transaction
//! each runs in, what it reads and in what order, and the errors it
//! reports. Each function is the [`Store`](super::Store) or
//! [`Nodes`](super::Nodes) method of its name, which every [`Backend`] gets
//! from one generic impl. Saving and counts are in `store::save`.

use serde_json::Value;

use super::backend::{Backend, ChatRow, ReadBack, Tx};
use super::errors::{
    branch_exists, check_chat_id, check_name, no_branch, no_chat, no_node, unreadable_metadata,
};
use super::tally::PathSummary;
use super::{
    BranchHead, BranchSummary, ChatSummary, CheckpointSummary, MAIN_BRANCH, NodeId, NodeKey,
    StoredChunk, Usage, now_ms,
};
use crate::error::Result;

pub(crate) use super::save::{put_counts, save};

pub(crate) fn open_chat<B: Backend>(store: &B, chat: &str) -> Result<ChatSummary> {
    check_chat_id(chat)?;
    store.write(|tx| {
        if tx.insert_chat(chat, MAIN_BRANCH, now_ms())? {
            tx.insert_branch(chat, MAIN_BRANCH, None)?;
        }
        summary(store, tx, chat)?.ok_or_else(|| no_chat(chat))
    })
}

pub(crate) fn chat<B: Backend>(store: &B, chat: &str) -> Result<Option<ChatSummary>> {
    store.read(|tx| summary(store, tx, chat))
}

pub(crate) fn chats<B: Backend>(store: &B) -> Result<Vec<ChatSummary>> {
    store.read(|tx| {
        tx.chat_rows()?
            .into_iter()
            .map(|row| row.into_summary(store.location()))
            .collect()
    })
}

pub(crate) fn set_metadata<B: Backend>(store: &B, chat: &str, metadata: &Value) -> Result<()> {
    store.write(|tx| {
        lock_chat(tx, chat)?;
        tx.set_metadata(chat, &metadata.to_string(), now_ms())
    })
}

pub(crate) fn head<B: Backend>(store: &B, chat: &str, branch: &str) -> Result<BranchHead> {
    store.read(|tx| {
        let (system, system_version) = tx.system_lane(chat)?.ok_or_else(|| no_chat(chat))?;
        let head = tx
            .branch_head(chat, branch)?
            .ok_or_else(|| no_branch(chat, branch))?;
        let chunks = match head {
            Some(head) => tx.position_of(chat, head)?.map_or(0, |p| p + 1),
            None => 0,
        };
        Ok(BranchHead {
            branch: branch.to_owned(),
            head,
            chunks: usize::try_from(chunks).unwrap_or(0),
            system,
            system_version,
        })
    })
}

pub(crate) fn read_back<B: Backend>(
    store: &B,
    chat: &str,
    from: NodeId,
    limit: usize,
    count_key: Option<&str>,
) -> Result<Vec<StoredChunk>> {
    let walk = ReadBack {
        from,
        limit: i64::try_from(limit).unwrap_or(i64::MAX),
        count_key,
    };
    store.read(|tx| tx.read_back(chat, walk))
}

pub(crate) fn ancestor<B: Backend>(
    store: &B,
    chat: &str,
    node: NodeId,
    position: usize,
) -> Result<Option<NodeId>> {
    let position = i64::try_from(position).unwrap_or(i64::MAX);
    store.read(|tx| tx.ancestor(chat, node, position))
}

pub(crate) fn nodes_with<B: Backend>(
    store: &B,
    chat: &str,
    key: NodeKey<'_>,
    max_position: usize,
) -> Result<Vec<(NodeId, usize, bool)>> {
    let max_position = i64::try_from(max_position).unwrap_or(i64::MAX);
    let found = store.read(|tx| tx.nodes_with(chat, key, max_position))?;
    Ok(found
        .into_iter()
        .map(|found| (found.node, found.position, found.call))
        .collect())
}

pub(crate) fn path_summary<B: Backend>(
    store: &B,
    chat: &str,
    node: NodeId,
    count_key: &str,
) -> Result<Option<PathSummary>> {
    let row = store.read(|tx| tx.path_row(chat, node, count_key))?;
    Ok(row.map(|row| PathSummary {
        node,
        position: usize::try_from(row.position).unwrap_or(0),
        last_user: row.tallies.last_user,
        last_call: row.tallies.last_call,
        last_protected: row.tallies.last_protected,
        classes: row.tallies.classes,
        tokens: row.tokens,
    }))
}

pub(crate) fn branches<B: Backend>(store: &B, chat: &str) -> Result<Vec<BranchSummary>> {
    store.read(|tx| {
        let active = summary(store, tx, chat)?
            .ok_or_else(|| no_chat(chat))?
            .active_branch;
        let rows = tx.branch_rows(chat)?;
        Ok(rows
            .into_iter()
            .map(|(name, head, chunks)| BranchSummary {
                active: name == active,
                name,
                head,
                chunks,
            })
            .collect())
    })
}

pub(crate) fn create_branch<B: Backend>(
    store: &B,
    chat: &str,
    name: &str,
    head: Option<NodeId>,
    switch: bool,
) -> Result<()> {
    store.write(|tx| {
        lock_chat(tx, chat)?;
        check_name(chat, name, "branch")?;
        check_node(tx, chat, head)?;
        if tx.branch_head(chat, name)?.is_some() {
            return Err(branch_exists(chat, name));
        }
        tx.insert_branch(chat, name, head)?;
        if switch {
            tx.set_active(chat, name, now_ms())?;
        }
        Ok(())
    })
}

pub(crate) fn switch_branch<B: Backend>(store: &B, chat: &str, name: &str) -> Result<()> {
    store.write(|tx| {
        lock_chat(tx, chat)?;
        if tx.branch_head(chat, name)?.is_none() {
            return Err(no_branch(chat, name));
        }
        tx.set_active(chat, name, now_ms())
    })
}

pub(crate) fn set_checkpoint<B: Backend>(
    store: &B,
    chat: &str,
    name: &str,
    node: Option<NodeId>,
) -> Result<()> {
    store.write(|tx| {
        lock_chat(tx, chat)?;
        check_name(chat, name, "checkpoint")?;
        check_node(tx, chat, node)?;
        tx.set_checkpoint(chat, name, node)
    })
}

pub(crate) fn checkpoints<B: Backend>(store: &B, chat: &str) -> Result<Vec<CheckpointSummary>> {
    store.read(|tx| {
        summary(store, tx, chat)?.ok_or_else(|| no_chat(chat))?;
        tx.checkpoints(chat)
    })
}

pub(crate) fn record_usage<B: Backend>(store: &B, chat: &str, usage: &Usage) -> Result<()> {
    store.write(|tx| {
        lock_chat(tx, chat)?;
        tx.insert_usage(chat, usage, now_ms())
    })
}

pub(crate) fn usage<B: Backend>(store: &B, chat: &str) -> Result<Vec<Usage>> {
    store.read(|tx| {
        summary(store, tx, chat)?.ok_or_else(|| no_chat(chat))?;
        tx.usage(chat)
    })
}

/// The chat's summary, if it exists.
fn summary<B: Backend>(store: &B, tx: &mut B::Tx<'_>, chat: &str) -> Result<Option<ChatSummary>> {
    tx.chat_row(chat)?
        .map(|row| row.into_summary(store.location()))
        .transpose()
}

/// Locks the chat for the rest of the write (see [`Tx::lock_chat`]);
/// its system lane's version.
pub(super) fn lock_chat(tx: &mut impl Tx, chat: &str) -> Result<u64> {
    tx.lock_chat(chat)?.ok_or_else(|| no_chat(chat))
}

/// Refuses a node that is not one of the chat's (`None`, the root, is).
fn check_node(tx: &mut impl Tx, chat: &str, node: Option<NodeId>) -> Result<()> {
    match node {
        Some(node) if tx.position_of(chat, node)?.is_none() => Err(no_node(chat, node)),
        _ => Ok(()),
    }
}

impl ChatRow {
    fn into_summary(self, location: &str) -> Result<ChatSummary> {
        let metadata = serde_json::from_str(&self.metadata)
            .map_err(|e| unreadable_metadata(location, &self.id, &e))?;
        Ok(ChatSummary {
            id: self.id,
            metadata,
            active_branch: self.active_branch,
            created_at_ms: self.created_at_ms,
            updated_at_ms: self.updated_at_ms,
        })
    }
}
