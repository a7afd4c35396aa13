//! A session's cache of rendered, counted chunks.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::prepare::PreparedChunk;
use crate::tokens::parts::CountedText;

/// Work done by one build, for replay reports and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BuildStats {
    /// Chunks rendered and counted by this build (cache misses).
    pub chunks_rendered: usize,
    /// Tokens of the chunks this build rendered: the text it had to tokenize.
    pub tokens_counted: usize,
    /// Chunks served from the cache.
    pub chunks_cached: usize,
}

/// Rendered chunks by id, each with the cap it was rendered under and its
/// stub once asked for. The session drops an entry when its chunk changes
/// and clears everything when a setting that shapes rendering changes.
#[derive(Debug, Default)]
pub(crate) struct ChunkCache {
    entries: FxHashMap<String, Entry>,
    pub(crate) stats: BuildStats,
}

#[derive(Debug)]
struct Entry {
    cap: Option<usize>,
    prepared: PreparedChunk,
    /// `None` until asked for; then the stub, if the chunk has one.
    stub: Option<Option<Arc<CountedText>>>,
}

impl ChunkCache {
    /// The chunk rendered under `cap`, from the cache or from `prepare`.
    pub(crate) fn prepared(
        &mut self,
        id: &str,
        cap: Option<usize>,
        prepare: impl FnOnce() -> PreparedChunk,
    ) -> PreparedChunk {
        if let Some(entry) = self.entries.get(id).filter(|e| e.cap == cap) {
            self.stats.chunks_cached += 1;
            return entry.prepared.clone();
        }
        let prepared = prepare();
        self.stats.chunks_rendered += 1;
        self.stats.tokens_counted += prepared.part.alone();
        self.entries.insert(
            id.to_owned(),
            Entry {
                cap,
                prepared: prepared.clone(),
                stub: None,
            },
        );
        prepared
    }

    /// The chunk's stub, from the cache or from `stub`.
    pub(crate) fn stub(
        &mut self,
        id: &str,
        stub: impl FnOnce() -> Option<Arc<CountedText>>,
    ) -> Option<Arc<CountedText>> {
        match self.entries.get_mut(id) {
            Some(entry) => entry.stub.get_or_insert_with(stub).clone(),
            None => stub(),
        }
    }

    pub(crate) fn forget(&mut self, id: &str) {
        self.entries.remove(id);
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
    }

    pub(crate) fn start_build(&mut self) {
        self.stats = BuildStats::default();
    }
}
