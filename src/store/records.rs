//! What the store's node-level operations ([`Nodes`]) read and write:
//! stored chunks, where a branch stands, and the one atomic change a save
//! makes. Crate-private: a runtime works through
//! [`ContextEngine`](crate::ContextEngine).

use super::NodeId;
#[cfg(doc)]
use super::Nodes;
use super::tally::ChunkMeta;
#[cfg(doc)]
use super::tally::TokenTally;

/// The version of the chunk codec: the chunk JSON of the session format.
/// A store keeps it beside every chunk, so a chunk written by a later
/// version of this crate is refused with a clear error instead of misread.
pub const CHUNK_CODEC: u32 = 1;

/// A stored chunk, as [`Nodes::read_back`] and [`Nodes::load`] return it.
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
    /// Its counts under the key [`Nodes::load`] asked for, if stored.
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

/// What [`Nodes::nodes_with`] looks nodes up by.
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
    /// The JSON, written with the codec `CHUNK_CODEC` names.
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
