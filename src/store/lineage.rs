//! Finding a node's ancestor at a given position in logarithmic time.
//!
//! Each node keeps, beside its parent, a *jump*: an ancestor chosen as in
//! Myers' applicative random-access stack (skew-binary jumps), so that
//! climbing from any node to its ancestor at position `p` takes
//! O(log n) steps: take the jump while it does not overshoot `p`, else the
//! parent. A node's jump is fixed when it is inserted, from its parent's
//! links alone, so a save stays in proportion to its batch.
//!
//! This is what lets a verb on a long chat read only what it needs: is a
//! chunk id on this branch (the node with that id must be the branch's
//! ancestor at its position), where does a page of the branch start.

use rustc_hash::FxHashMap;

use super::NodeId;

/// A node's place in the graph: what the jumps are computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Link {
    pub(crate) id: NodeId,
    /// Its distance from the root (the root is at 0).
    pub(crate) position: i64,
    /// Its jump; `None` for a root.
    pub(crate) jump: Option<NodeId>,
}

/// The jump of a new node whose parent is `parent`. `link(id)` gives the
/// links of the parent's jump chain (the parent's jump, and its jump).
///
/// The rule: if the parent's jump spans as far as its jump's jump does,
/// the new node jumps over both; else it jumps to its parent. Spans then
/// grow as 1, 1, 3, 1, 1, 3, 7…, the sizes of a skew-binary number.
pub(crate) fn jump_for(parent: Link, link: impl Fn(NodeId) -> Option<Link>) -> NodeId {
    let Some(jump) = parent.jump.and_then(&link) else {
        return parent.id;
    };
    let Some(jump_of_jump) = jump.jump.and_then(&link) else {
        return parent.id;
    };
    if parent.position - jump.position == jump.position - jump_of_jump.position {
        jump_of_jump.id
    } else {
        parent.id
    }
}

/// The links of nodes chained one under another below `parent`, as a
/// save inserts them. `jump_chain` holds the parent's jump chain (every
/// node reached by following jumps from it), which is all that the jumps
/// of the new nodes can reach outside the new nodes themselves.
pub(crate) struct Chain {
    known: FxHashMap<NodeId, Link>,
    last: Option<Link>,
}

impl Chain {
    pub(crate) fn under(parent: Option<Link>, jump_chain: &[Link]) -> Self {
        let known = jump_chain
            .iter()
            .chain(&parent)
            .map(|l| (l.id, *l))
            .collect();
        Chain {
            known,
            last: parent,
        }
    }

    /// The position and jump of the next node.
    pub(crate) fn next(&self) -> (i64, Option<NodeId>) {
        match self.last {
            None => (0, None),
            Some(parent) => {
                let jump = jump_for(parent, |node| self.known.get(&node).copied());
                (parent.position + 1, Some(jump))
            }
        }
    }

    /// Hangs node `id` under the last one; returns its link.
    pub(crate) fn push(&mut self, id: NodeId) -> Link {
        let (position, jump) = self.next();
        let link = Link { id, position, jump };
        self.known.insert(id, link);
        self.last = Some(link);
        link
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Links of a chain of `n` nodes with ids 0..n, as saves build them.
    fn chain(n: usize) -> Vec<Link> {
        let mut chain = Chain::under(None, &[]);
        (0..n as NodeId).map(|id| chain.push(id)).collect()
    }

    /// Climbs from `from` to position `target` as the stores do; returns
    /// the node reached and the steps taken.
    fn climb(links: &[Link], from: NodeId, target: i64) -> (NodeId, usize) {
        let mut node = links[from as usize];
        let mut steps = 0;
        while node.position > target {
            let jump = links[node.jump.unwrap_or(node.id) as usize];
            node = if jump.position >= target {
                jump
            } else {
                links[(node.id - 1) as usize]
            };
            steps += 1;
        }
        (node.id, steps)
    }

    #[test]
    fn every_ancestor_is_found_in_logarithmic_steps() {
        let links = chain(5_000);
        let mut worst = 0;
        for from in [1, 2, 3, 7, 100, 1_023, 1_024, 4_999] {
            for target in 0..=from {
                let (found, steps) = climb(&links, from, target);
                assert_eq!(found, target, "from {from} to {target}");
                worst = worst.max(steps);
            }
        }
        assert!(worst <= 3 * 13, "{worst} steps for 5,000 nodes");
    }

    #[test]
    fn a_chain_built_in_batches_links_as_one_built_at_once() {
        let whole = chain(300);
        let mut links: Vec<Link> = Vec::new();
        for batch in (0..300).collect::<Vec<NodeId>>().chunks(7) {
            let parent = links.last().copied();
            // The parent's jump chain, as a store reads it.
            let mut jump_chain = Vec::new();
            let mut at = parent;
            while let Some(link) = at {
                jump_chain.push(link);
                at = link.jump.map(|j| links[j as usize]);
            }
            let mut chain = Chain::under(parent, &jump_chain);
            links.extend(batch.iter().map(|&id| chain.push(id)));
        }
        assert_eq!(links, whole);
    }
}
