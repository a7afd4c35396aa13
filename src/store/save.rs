//! Saving, written once for every backend: the conflict checks, the new
//! nodes' links and tallies, pruning what a save replaced, and counts put
//! on stored nodes later.

use rustc_hash::FxHashMap;

use super::backend::{Backend, CountRow, NodeRow, Tx};
use super::errors::{check_expected, no_branch, no_node};
use super::lineage::Chain;
use super::tally::{NodeTallies, TokenTally, chain_tallies, token_tally};
use super::verbs::lock_chat;
use super::{NodeId, Save, Saved, now_ms};
use crate::error::Result;

/// Writes `save` in one transaction (see [`Nodes::save`](super::Nodes::save)).
pub(crate) fn save<B: Backend>(store: &B, chat: &str, save: &Save) -> Result<Saved> {
    store.write(|tx| {
        let mut system_version = lock_chat(tx, chat)?;
        let actual = tx
            .branch_head(chat, &save.branch)?
            .ok_or_else(|| no_branch(chat, &save.branch))?;
        check_expected(chat, save, actual, system_version)?;
        let nodes = insert_chunks(tx, chat, save)?;
        let head = nodes.last().copied().or(actual);
        tx.set_head(chat, &save.branch, head)?;
        if let Some(replaced) = save.replaces {
            prune(tx, chat, replaced)?;
        }
        if save.system.is_some() {
            system_version += 1;
        }
        tx.touch(chat, save.system.as_deref(), now_ms())?;
        Ok(Saved {
            head,
            nodes,
            system_version,
        })
    })
}

/// Inserts the save's chunks as a chain under its parent: the ids are
/// drawn first, so each node's parent, jump and tallies are known before
/// any is inserted.
fn insert_chunks(tx: &mut impl Tx, chat: &str, save: &Save) -> Result<Vec<NodeId>> {
    let mut chain = chain_under(tx, chat, save.parent)?;
    if save.chunks.is_empty() {
        return Ok(Vec::new());
    }
    let ids = tx.new_node_ids(save.chunks.len())?;
    let (tallies, tokens): (Vec<_>, Vec<_>) =
        chain_tallies(&ids, &save.chunks, parent_tallies(tx, save)?)
            .into_iter()
            .unzip();
    let parents = std::iter::once(save.parent).chain(ids.iter().map(|&id| Some(id)));
    let nodes: Vec<NodeRow<'_>> = ids
        .iter()
        .zip(parents)
        .zip(save.chunks.iter().zip(tallies))
        .map(|((&id, parent), (chunk, tallies))| NodeRow {
            link: chain.push(id),
            parent,
            chunk,
            tallies,
        })
        .collect();
    tx.insert_nodes(chat, &nodes)?;
    let counts: Vec<CountRow<'_>> = nodes
        .iter()
        .zip(tokens)
        .filter_map(|(node, tally)| {
            let counts = node.chunk.counts.as_ref()?;
            Some(CountRow {
                node: node.link.id,
                key: &counts.key,
                value: &counts.value,
                tally,
            })
        })
        .collect();
    if !counts.is_empty() {
        tx.insert_counts(&counts)?;
    }
    Ok(ids)
}

/// The tallies of the save's parent, and its token tally under the key of
/// the save's counts; `None` for a save at the root.
fn parent_tallies(
    tx: &mut impl Tx,
    save: &Save,
) -> Result<Option<(NodeTallies, Option<TokenTally>)>> {
    let Some(parent) = save.parent else {
        return Ok(None);
    };
    let tokens = match save.chunks.first().and_then(|c| c.counts.as_ref()) {
        Some(counts) => tx.token_tally(parent, &counts.key)?,
        None => None,
    };
    Ok(Some((tx.tallies(parent)?.unwrap_or_default(), tokens)))
}

/// The chain new nodes hang in under `parent` (`None`: the root).
fn chain_under(tx: &mut impl Tx, chat: &str, parent: Option<NodeId>) -> Result<Chain> {
    let Some(parent) = parent else {
        return Ok(Chain::under(None, &[]));
    };
    let jump_chain = tx.jump_chain(chat, parent)?;
    let link = *jump_chain.first().ok_or_else(|| no_node(chat, parent))?;
    Ok(Chain::under(Some(link), &jump_chain))
}

/// Deletes `node` and the nodes below it unless a branch or checkpoint
/// reaches one of them.
fn prune(tx: &mut impl Tx, chat: &str, node: NodeId) -> Result<()> {
    if !tx.reached(chat, node)? {
        tx.delete_below(chat, node)?;
    }
    Ok(())
}

/// Stores counts of stored nodes under `key` (see
/// [`Nodes::put_counts`](super::Nodes::put_counts)): each node's token
/// tally is its parent's plus its own tokens, the parent's taken from this
/// batch when it is in it (parents come before children), and a node's
/// counts already stored are kept.
pub(crate) fn put_counts<B: Backend>(
    store: &B,
    chat: &str,
    key: &str,
    counts: &[(NodeId, String, u64)],
) -> Result<()> {
    store.write(|tx| {
        if tx.lock_chat(chat)?.is_none() {
            // No chat, no nodes: nothing to keep counts of.
            return Ok(());
        }
        let nodes: Vec<NodeId> = counts.iter().map(|(node, _, _)| *node).collect();
        let known: FxHashMap<NodeId, _> = tx
            .count_bases(chat, key, &nodes)?
            .into_iter()
            .map(|base| (base.node, base))
            .collect();
        let mut made: FxHashMap<NodeId, Option<TokenTally>> = FxHashMap::default();
        let mut rows = Vec::with_capacity(counts.len());
        for (node, value, tokens) in counts {
            let Some(found) = known.get(node) else {
                continue;
            };
            let above = found
                .parent
                .map(|parent| made.get(&parent).copied().unwrap_or(found.parent_tally));
            let tally = token_tally(above, Some(*tokens));
            made.insert(*node, found.own.unwrap_or(tally));
            rows.push(CountRow {
                node: *node,
                key,
                value,
                tally,
            });
        }
        tx.insert_counts(&rows)
    })
}
