//! Chunks rendered and counted ahead of the newest-first walk, on several
//! threads. Tokenizing is most of a cold build, and chunks are independent
//! until the walk meets them in order: a batch of the next chunks is made
//! ready in parallel, then walked as before. The walk's decisions, errors
//! and statistics are those of a walk that renders each chunk itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::ContextBuilder;
use super::frozen::Frozen;
use crate::chunk_cache::ChunkCache;
use crate::error::Result;
use crate::memory::{MemoryChunk, MemoryState};
use crate::prepare::{PreparedChunk, Preparer};
use crate::roles::{Retention, Role};
use crate::tokens::parts::CountedText;

/// Bytes of chunk bodies a batch renders: enough work (milliseconds) that
/// starting the threads is lost in it, little enough that the texts a
/// batch holds before the walk lets them go stay small.
const BATCH_BYTES: usize = 1 << 20;
/// Below this much to render, a batch runs on the walk's own thread.
const MIN_PARALLEL_BYTES: usize = 64 << 10;

/// A chunk made ready off the walk: its rendering, and its stub when the
/// walk will ask for one.
pub(super) struct Ready {
    pub(super) prepared: Result<PreparedChunk>,
    pub(super) stub: Option<Option<Arc<CountedText>>>,
}

/// The batch of chunks made ready ahead of the walk.
pub(super) struct Ahead {
    threads: usize,
    /// The index of the batch's oldest chunk; `ready[i]` is chunk `start + i`.
    start: usize,
    ready: Vec<Option<Ready>>,
}

/// What a batch reads: the chunks and how the walk will treat them.
pub(super) struct Jobs<'j> {
    pub(super) state: &'j MemoryState,
    pub(super) selected: &'j [bool],
    pub(super) turns_after: &'j [usize],
    pub(super) frozen: &'j Frozen,
    pub(super) preparer: &'j Preparer<'j>,
}

impl Ahead {
    /// Nothing ready yet; batches run on `threads` threads (one: none run).
    pub(super) fn new(threads: usize) -> Self {
        Ahead {
            threads,
            start: usize::MAX,
            ready: Vec::new(),
        }
    }

    /// The chunk at `index` made ready, if its batch did it.
    pub(super) fn take(&mut self, index: usize) -> Option<Ready> {
        let slot = index.checked_sub(self.start)?;
        self.ready.get_mut(slot)?.take()
    }

    /// Whether the walk, at `index`, has gone past the batch.
    pub(super) fn needs_batch(&self, index: usize) -> bool {
        self.threads > 1 && index < self.start
    }
}

impl ContextBuilder {
    /// Makes ready, on the threads of `ahead`, the chunks from `newest`
    /// back that the walk will render: selected, not frozen, not in
    /// `cache` under their cap.
    pub(super) fn render_ahead(
        &self,
        newest: usize,
        jobs: &Jobs<'_>,
        cache: &ChunkCache,
        ahead: &mut Ahead,
    ) {
        let mut todo = Vec::new();
        let mut bytes = 0;
        let mut start = newest + 1;
        while start > 0 && bytes < BATCH_BYTES {
            start -= 1;
            if self.renders(start, jobs, cache) {
                todo.push(start);
                bytes += size_of_chunk(&jobs.state.chunks[start]);
            }
        }
        ahead.start = start;
        ahead.ready.clear();
        if bytes < MIN_PARALLEL_BYTES {
            return;
        }
        ahead.ready.resize_with(newest + 1 - start, || None);
        for (index, ready) in self.ready_in_parallel(&todo, jobs, ahead.threads) {
            ahead.ready[index - start] = Some(ready);
        }
    }

    /// Whether the walk will render the chunk at `index`: selected, not
    /// frozen, and with nothing in `cache` (a chunk cached under another
    /// cap is rare, and rendered by the walk).
    fn renders(&self, index: usize, jobs: &Jobs<'_>, cache: &ChunkCache) -> bool {
        jobs.selected[index] && jobs.frozen.get(index).is_none() && !cache.holds(index)
    }

    /// The chunks at `todo` made ready on `threads` threads, this one
    /// among them, each taking the next chunk not taken.
    fn ready_in_parallel(
        &self,
        todo: &[usize],
        jobs: &Jobs<'_>,
        threads: usize,
    ) -> Vec<(usize, Ready)> {
        let next = AtomicUsize::new(0);
        let work = || {
            let mut done = Vec::new();
            loop {
                let Some(&index) = todo.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    return done;
                };
                done.push((index, self.make_ready(index, jobs)));
            }
        };
        std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
            let mut done = work();
            for helper in helpers {
                // A helper that panicked left its chunks undone: the walk
                // renders them itself.
                done.extend(helper.join().unwrap_or_default());
            }
            done
        })
    }

    /// The chunk at `index` rendered under its cap, with the stub the walk
    /// will ask for when it is disposable.
    fn make_ready(&self, index: usize, jobs: &Jobs<'_>) -> Ready {
        let chunk = &jobs.state.chunks[index];
        let renderer = self.renderers.renderer_for(chunk);
        let by_default = self.renderers.renders_by_default(chunk);
        let cap = jobs.preparer.cap_for(chunk, renderer, by_default);
        let prepared = jobs.preparer.prepare(index, chunk, renderer, cap);
        let retention = jobs
            .preparer
            .policy
            .retention_of(chunk, jobs.turns_after[index]);
        let stub = match &prepared {
            Ok(ready) if ready.role != Role::System && retention == Retention::Disposable => {
                Some(jobs.preparer.stub(chunk, renderer, &ready.part))
            }
            _ => None,
        };
        Ready { prepared, stub }
    }
}

/// About how many bytes rendering `chunk` writes.
fn size_of_chunk(chunk: &MemoryChunk) -> usize {
    let text = chunk.text.as_ref().map_or(0, String::len);
    let data = chunk.data.as_ref().map_or(0, |d| d.as_str().len());
    text + data + chunk.content.as_ref().map_or(0, |c| 64 * c.len())
}
