//! What a store keeps about the path to each node, so that a build of a
//! long chat reads only its newest chunks: where the latest user message,
//! the newest tool call and the last protected chunk sit, how many chunks
//! of each class came before, and (per rendering settings) how many tokens.
//!
//! Each node's tallies are its parent's plus its own, fixed when it is
//! inserted; the store keeps them as short text and never reads a chunk's
//! JSON to make them (the writer says what it needs in [`ChunkMeta`]).

use super::NodeId;
use crate::model::roles::ChunkClass;

/// How many classes of chunk a [`ClassTally`] has room for (stores write
/// this many counts; [`ChunkClass::COUNT`] of them are used).
pub const CLASSES: usize = 32;

/// Token sizes a [`TokenTally`] counts the chunks above: a cap at or above
/// one of them cuts no chunk at or below it.
pub const SIZES: [u64; 5] = [64, 256, 1_024, 4_096, 16_384];

/// What a store needs to know of a chunk it saves to keep its tallies.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ChunkMeta {
    /// Its class, which decides its priority when it sets none.
    pub class: ChunkClass,
    /// Whether no budget ever drops it (pinned, `critical`, a system chunk).
    pub protected: bool,
    /// Its own priority, when the chunk sets one.
    pub priority: Option<i64>,
    /// Whether it is a user message.
    pub user_turn: bool,
    /// Whether it is a tool call.
    pub tool_call: bool,
    /// The call id of a tool call or result, by which a tool unit's
    /// members find each other.
    pub call_id: Option<String>,
    /// Whether it is a tool result whose call is not on the branch: no
    /// build shows it or counts it as dropped.
    pub orphan: bool,
}

/// Unprotected chunks on a path, by class: those without a priority of
/// their own, counted per class, and the highest priority the others set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClassTally {
    /// Per class, the chunks that take their class's priority.
    pub counts: [u64; CLASSES],
    /// The highest priority a chunk set itself, if any did.
    pub max_priority: Option<i64>,
    /// Orphan results, in no class.
    pub orphans: u64,
}

impl ClassTally {
    /// The tally with one more chunk.
    pub(crate) fn with(mut self, meta: &ChunkMeta) -> Self {
        if meta.protected {
            return self;
        }
        if meta.orphan {
            self.orphans += 1;
            return self;
        }
        match meta.priority {
            Some(priority) => {
                self.max_priority = Some(self.max_priority.map_or(priority, |p| p.max(priority)));
            }
            None => self.counts[meta.class.index() % CLASSES] += 1,
        }
        self
    }

    pub(crate) fn encode(&self) -> String {
        let counts: Vec<String> = self.counts.iter().map(u64::to_string).collect();
        let max = self.max_priority.map_or("-".to_owned(), |p| p.to_string());
        format!("{} {max} {}", counts.join(" "), self.orphans)
    }

    pub(crate) fn decode(text: &str) -> Option<Self> {
        let mut fields = text.split(' ');
        let mut tally = ClassTally::default();
        for count in &mut tally.counts {
            *count = fields.next()?.parse().ok()?;
        }
        tally.max_priority = match fields.next()? {
            "-" => None,
            p => Some(p.parse().ok()?),
        };
        tally.orphans = fields.next()?.parse().ok()?;
        fields.next().is_none().then_some(tally)
    }
}

/// Tokens of the chunks on a path under one set of rendering settings:
/// their sum, and how many are above each of [`SIZES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenTally {
    /// The sum of each chunk's tokens alone.
    pub total: u64,
    /// Per size of [`SIZES`], the chunks above it.
    pub over: [u64; SIZES.len()],
}

impl TokenTally {
    /// The tally with one more chunk of `tokens`.
    pub(crate) fn with(mut self, tokens: u64) -> Self {
        self.total += tokens;
        for (over, size) in self.over.iter_mut().zip(SIZES) {
            *over += u64::from(tokens > size);
        }
        self
    }

    /// The two tallies together.
    pub fn plus(&self, other: &TokenTally) -> TokenTally {
        let mut over = self.over;
        for (o, add) in over.iter_mut().zip(other.over) {
            *o += add;
        }
        TokenTally {
            total: self.total + other.total,
            over,
        }
    }

    /// The tally of the path from the end of `before` to the end of `self`.
    pub fn minus(&self, before: &TokenTally) -> TokenTally {
        let mut over = [0; SIZES.len()];
        for (i, o) in over.iter_mut().enumerate() {
            *o = self.over[i].saturating_sub(before.over[i]);
        }
        TokenTally {
            total: self.total.saturating_sub(before.total),
            over,
        }
    }

    pub(crate) fn encode(&self) -> String {
        let over: Vec<String> = self.over.iter().map(u64::to_string).collect();
        format!("{} {}", self.total, over.join(" "))
    }

    pub(crate) fn decode(text: &str) -> Option<Self> {
        let mut fields = text.split(' ');
        let mut tally = TokenTally {
            total: fields.next()?.parse().ok()?,
            ..TokenTally::default()
        };
        for over in &mut tally.over {
            *over = fields.next()?.parse().ok()?;
        }
        fields.next().is_none().then_some(tally)
    }
}

/// What a store knows of the path from the root to a node.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PathSummary {
    /// The node.
    pub node: NodeId,
    /// Its position.
    pub position: usize,
    /// The newest user message on the path (the node itself included).
    pub last_user: Option<NodeId>,
    /// The newest tool call on the path (the node itself included).
    pub last_call: Option<NodeId>,
    /// The newest protected chunk on the path (the node itself included).
    pub last_protected: Option<NodeId>,
    /// The path's unprotected chunks by class; `None` when a node of it
    /// was stored before tallies were kept.
    pub classes: Option<ClassTally>,
    /// The path's tokens under the settings asked for; `None` unless every
    /// node of it has its counts under them.
    pub tokens: Option<TokenTally>,
}

/// The links a new node takes from its parent's summary and its own meta.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NodeTallies {
    pub(crate) last_user: Option<NodeId>,
    pub(crate) last_call: Option<NodeId>,
    pub(crate) last_protected: Option<NodeId>,
    pub(crate) classes: Option<ClassTally>,
}

impl NodeTallies {
    /// The tallies of node `id` with `meta`, under `parent` (`None`: a
    /// root, whose tallies start empty).
    pub(crate) fn of(id: NodeId, meta: &ChunkMeta, parent: Option<&NodeTallies>) -> Self {
        let empty = NodeTallies {
            classes: Some(ClassTally::default()),
            ..NodeTallies::default()
        };
        let parent = parent.unwrap_or(&empty);
        NodeTallies {
            last_user: if meta.user_turn {
                Some(id)
            } else {
                parent.last_user
            },
            last_call: if meta.tool_call {
                Some(id)
            } else {
                parent.last_call
            },
            last_protected: if meta.protected {
                Some(id)
            } else {
                parent.last_protected
            },
            classes: parent.classes.map(|c| c.with(meta)),
        }
    }
}

/// The token tally of a node with `tokens` under a parent whose tally is
/// `parent` (`Some(None)`: a parent without one; `None`: a root).
pub(crate) fn token_tally(
    parent: Option<Option<TokenTally>>,
    tokens: Option<u64>,
) -> Option<TokenTally> {
    let base = match parent {
        None => TokenTally::default(),
        Some(parent) => parent?,
    };
    Some(base.with(tokens?))
}

/// The tallies of new nodes `ids` holding `chunks`, chained under a
/// parent with `parent` tallies and token tally (under the chunks' count
/// key), or under no parent.
pub(crate) fn chain_tallies(
    ids: &[NodeId],
    chunks: &[super::NewChunk],
    parent: Option<(NodeTallies, Option<TokenTally>)>,
) -> Vec<(NodeTallies, Option<TokenTally>)> {
    let (mut above, mut tokens_above) = match parent {
        Some((tallies, tokens)) => (Some(tallies), Some(tokens)),
        None => (None, None),
    };
    let mut out = Vec::with_capacity(ids.len());
    for (&id, chunk) in ids.iter().zip(chunks) {
        let tallies = NodeTallies::of(id, &chunk.meta, above.as_ref());
        let tokens = token_tally(tokens_above, chunk.counts.as_ref().map(|c| c.tokens));
        tokens_above = Some(tokens);
        above = Some(tallies.clone());
        out.push((tallies, tokens));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_read_back_as_written() {
        let meta = ChunkMeta {
            class: ChunkClass::at(3).unwrap(),
            priority: Some(-7),
            ..ChunkMeta::default()
        };
        let classes = ClassTally::default()
            .with(&meta)
            .with(&ChunkMeta::default());
        assert_eq!(ClassTally::decode(&classes.encode()), Some(classes));
        assert_eq!(classes.counts[0], 1);
        assert_eq!(classes.max_priority, Some(-7));
        let tokens = TokenTally::default().with(5).with(300);
        assert_eq!(TokenTally::decode(&tokens.encode()), Some(tokens));
        assert_eq!(tokens.over, [1, 1, 0, 0, 0]);
        assert_eq!(ClassTally::decode("1 2"), None);
        assert_eq!(TokenTally::decode("1 2 3 4 5 6 7"), None);
    }
}
