//! Building a compacted branch from what its compaction leaves in view.
//!
//! The newest compaction folds every chunk up to the one it covers but
//! the protected ones and its task (see `budget::fold`). So a build reads
//! back from the head only to the covered chunk, and fetches the
//! protected chunks before it through the path tallies. The build of
//! those chunks is the build of the whole branch: what it leaves out is
//! folded, and no budget decision reaches it.
//!
//! A compaction without its figures (written by hand) is counted from the
//! chunks it folds, so its branch is read whole, as when there are more
//! protected chunks than a build fetches one by one.

use super::ContextEngine;
use super::load::{decode_chunk, lane_of};
use super::newest::{FIRST_READ, NewestBuild};
use super::record::BuildRecord;
use crate::budget::{Policy, is_compaction};
use crate::error::Result;
use crate::model::memory::MemoryChunk;
use crate::pipeline::Outside;
use crate::store::{NodeId, StoredChunk};

impl ContextEngine {
    /// The chunks from the head back to the one the newest compaction
    /// covers, newest first, when that compaction states its figures;
    /// `None` otherwise (the branch is read whole).
    pub(super) fn read_to_covered(
        &self,
        head: NodeId,
        key: &str,
    ) -> Result<Option<Vec<(StoredChunk, MemoryChunk)>>> {
        let location = self.store.location();
        let mut read: Vec<(StoredChunk, MemoryChunk)> = Vec::new();
        let mut covers: Option<String> = None;
        let (mut from, mut want) = (Some(head), FIRST_READ);
        while let Some(node) = from {
            let page = self.nodes().read_back(&self.chat, node, want, Some(key))?;
            want = want.saturating_mul(2);
            from = page.last().and_then(|c| c.parent);
            for stored in page {
                let chunk = decode_chunk(stored.position, &stored, &location)?;
                if covers.is_none() && is_compaction(&chunk) {
                    if chunk.folded().is_none() {
                        return Ok(None);
                    }
                    covers = chunk.covers().map(str::to_owned);
                }
                let reached = covers.as_deref() == Some(chunk.id.as_str());
                read.push((stored, chunk));
                if reached {
                    return Ok(Some(read));
                }
            }
        }
        Ok(None)
    }

    /// The build of the branch from the chunks its newest compaction
    /// leaves in view; `None` when the branch must be read whole. Given
    /// the branch's last build (`extending`), it repeats its cut.
    pub(super) fn build_compacted(
        &self,
        policy: &Policy,
        extending: Option<&BuildRecord>,
    ) -> Result<Option<NewestBuild>> {
        let (Some(head), Some(key)) = (self.head, self.session.count_key()) else {
            return Ok(None);
        };
        let Some(read) = self.read_to_covered(head, &key)? else {
            return Ok(None);
        };
        let Some(covered) = read.last().map(|(stored, _)| stored.node) else {
            return Ok(None);
        };
        let Some(summary) = self.nodes().path_summary(&self.chat, covered, &key)? else {
            return Ok(None);
        };
        let Some(old) = self.protected_before(&summary, summary.last_user, &key)? else {
            return Ok(None);
        };
        let location = self.store.location();
        let mut in_view: Vec<(StoredChunk, MemoryChunk)> = Vec::new();
        for stored in old.into_iter().filter(|c| c.node != covered) {
            let chunk = decode_chunk(stored.position, &stored, &location)?;
            // Earlier compactions are folded: none is in view.
            if !is_compaction(&chunk) {
                in_view.push((stored, chunk));
            }
        }
        let newest = read.iter().position(|(_, chunk)| is_compaction(chunk));
        let kept = read
            .into_iter()
            .enumerate()
            .filter(|(i, (_, chunk))| Some(*i) == newest || !is_compaction(chunk));
        in_view.extend(kept.rev().map(|(_, read)| read));
        self.build_in_view(in_view, policy, extending).map(Some)
    }

    /// The build of `in_view` (oldest first), with the stored counts, as
    /// `build_newest` builds what it reads.
    fn build_in_view(
        &self,
        in_view: Vec<(StoredChunk, MemoryChunk)>,
        policy: &Policy,
        extending: Option<&BuildRecord>,
    ) -> Result<NewestBuild> {
        let (stored, chunks): (Vec<StoredChunk>, Vec<MemoryChunk>) = in_view.into_iter().unzip();
        let mut state = lane_of(self.held());
        state.chunks = chunks;
        let stored: Vec<&StoredChunk> = stored.iter().collect();
        let built = self.build_read(&state, &stored, (policy, extending), Outside::default())?;
        let (mut result, positions) = built;
        result.unread_chunks = self.stored.saturating_sub(state.chunks.len());
        Ok(NewestBuild {
            result,
            positions,
            chunks: state.chunks,
            unread: (0, (0, 0)),
        })
    }
}
