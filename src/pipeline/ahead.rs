//! Chunks rendered and counted ahead of the newest-first walk, on several
//! threads. Tokenizing is most of a cold build, and chunks are independent
//! until the walk meets them in order: a batch of the next chunks is made
//! ready in parallel, then walked as before. The walk's decisions, errors
//! and statistics are those of a walk that renders each chunk itself.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::thread::{Builder, Scope};

use super::frozen::Frozen;
use super::history::renderer_and_cap;
use super::ready::{PreparedChunk, Preparer};
use crate::budget::{Calls, Timeline, is_orphan_result};
use crate::error::Result;
use crate::model::memory::{MemoryChunk, MemoryState};
use crate::model::roles::{Retention, Role};
use crate::pipeline::BuildCache;
use crate::settings::Settings;
use crate::tokens::parts::CountedText;

/// Bytes of chunk bodies a batch renders: milliseconds of work, and little
/// text held before the walk lets go of what the plan will cut.
const BATCH_BYTES: usize = 256 << 10;
/// The most chunks a batch renders, whatever their sizes seem to be (a
/// `content` chunk is sized by its blocks, not by its text).
const BATCH_CHUNKS: usize = 512;
/// Below this much to render, a batch runs on the walk's own thread, and
/// no helper thread is started.
const MIN_PARALLEL_BYTES: usize = 64 << 10;

/// A chunk made ready off the walk: its rendering, and its stub when the
/// walk will ask for one.
pub(super) struct Ready {
    pub(super) prepared: Result<PreparedChunk>,
    pub(super) stub: Option<Option<Arc<CountedText>>>,
}

/// The batch of chunks made ready ahead of the walk.
pub(super) struct Ahead {
    /// The walk needs the next batch below this index.
    batch_below: usize,
    /// `ready[i]` is chunk `first + i`, when it was made ready.
    first: usize,
    ready: Vec<Option<Ready>>,
}

impl Ahead {
    pub(super) fn new() -> Self {
        Ahead {
            batch_below: usize::MAX,
            first: 0,
            ready: Vec::new(),
        }
    }

    /// The chunk at `index` made ready, if its batch did it.
    pub(super) fn take(&mut self, index: usize) -> Option<Ready> {
        let slot = index.checked_sub(self.first)?;
        self.ready.get_mut(slot)?.take()
    }

    /// Whether the walk, at `index`, has gone past the batch.
    pub(super) fn needs_batch(&self, index: usize) -> bool {
        index < self.batch_below
    }
}

/// What a batch reads: the chunks and how the walk will treat them.
pub(super) struct Jobs<'j> {
    pub(super) settings: &'j Settings,
    pub(super) state: &'j MemoryState,
    pub(super) selected: &'j [bool],
    pub(super) timeline: &'j Timeline,
    pub(super) frozen: &'j Frozen,
    pub(super) preparer: &'j Preparer<'j>,
    /// The call ids of the selected tool calls: an orphan result is not
    /// stubbed.
    pub(super) calls: &'j Calls<'j>,
    /// Every chunk below this index is in the cache.
    pub(super) cached_below: usize,
}

/// Chunks made ready by one thread, with their indexes.
type Done = Vec<(usize, Ready)>;

/// The chunks of one batch, taken one by one by whichever thread is free.
struct Batch {
    todo: Vec<usize>,
    next: AtomicUsize,
}

/// A batch for a helper, and where it sends what it made ready.
type Errand = (Arc<Batch>, Sender<Done>);

/// Threads that make batches ready beside the walk's own, started as the
/// batches need them and kept for the build (a thread's tokenizer memo
/// warms up once); they end when this is dropped.
pub(super) struct Helpers<'scope, 'env> {
    scope: &'scope Scope<'scope, 'env>,
    jobs: &'env Jobs<'env>,
    /// The threads asked for, the walk's own included.
    threads: usize,
    helpers: Vec<Sender<Errand>>,
    /// Whether the system refused a thread: no more are asked for.
    refused: bool,
}

impl<'scope, 'env> Helpers<'scope, 'env> {
    /// Up to `threads` threads in all (one: none is started).
    pub(super) fn new(scope: &'scope Scope<'scope, 'env>, jobs: &'env Jobs<'env>) -> Self {
        Helpers {
            scope,
            jobs,
            threads: jobs.settings.threads,
            helpers: Vec::new(),
            refused: false,
        }
    }

    /// Makes ready the chunks from `newest` back that the walk will render
    /// (selected, not frozen, nothing in `cache`), a batch's worth, when
    /// they are worth the threads.
    pub(super) fn render_ahead(&mut self, newest: usize, cache: &BuildCache, ahead: &mut Ahead) {
        let jobs = self.jobs;
        ahead.ready.clear();
        if self.threads < 2 {
            ahead.batch_below = 0;
            return;
        }
        let mut todo = Vec::new();
        let mut bytes = 0;
        let mut first = newest + 1;
        while first > jobs.cached_below && bytes < BATCH_BYTES && todo.len() < BATCH_CHUNKS {
            first -= 1;
            if jobs.selected[first] && jobs.frozen.get(first).is_none() && !cache.holds(first) {
                todo.push(first);
                bytes += size_of_chunk(&jobs.state.chunks[first]);
            }
        }
        // Below the cache's first gap, the walk renders nothing.
        ahead.batch_below = if first > jobs.cached_below { first } else { 0 };
        ahead.first = first;
        if todo.len() < 2 || bytes < MIN_PARALLEL_BYTES {
            return;
        }
        ahead.ready.resize_with(newest + 1 - first, || None);
        for (index, ready) in self.in_parallel(todo) {
            ahead.ready[index - first] = Some(ready);
        }
    }

    /// The chunks of `todo` made ready by the helpers and this thread.
    fn in_parallel(&mut self, todo: Vec<usize>) -> Done {
        // This thread takes chunks too; a helper more than the batch has
        // chunks would have none to take.
        let wanted = self.threads.min(todo.len()) - 1;
        self.start_helpers(wanted);
        let batch = Arc::new(Batch {
            todo,
            next: AtomicUsize::new(0),
        });
        let (done_tx, done) = channel();
        // A helper that is gone takes no batch and sends nothing back.
        let sent = self
            .helpers
            .iter()
            .take(wanted)
            .filter(|helper| helper.send((Arc::clone(&batch), done_tx.clone())).is_ok())
            .count();
        // Only the helpers hold a sender now: if they all end, `recv` fails
        // instead of waiting.
        drop(done_tx);
        let mut ready = work(self.jobs, &batch);
        for _ in 0..sent {
            match done.recv() {
                Ok(theirs) => ready.extend(theirs),
                Err(_) => break,
            }
        }
        ready
    }

    /// Starts helpers until there are `wanted`, or the system gives no
    /// more (with none, the walk's thread does every batch).
    fn start_helpers(&mut self, wanted: usize) {
        while self.helpers.len() < wanted && !self.refused {
            let (errand_tx, errands) = channel::<Errand>();
            let jobs = self.jobs;
            let helper = move || {
                for (batch, done) in errands {
                    if done.send(work(jobs, &batch)).is_err() {
                        return;
                    }
                }
            };
            match Builder::new().spawn_scoped(self.scope, helper) {
                Ok(_) => self.helpers.push(errand_tx),
                Err(_) => self.refused = true,
            }
        }
    }
}

/// Takes the batch's chunks one by one until none is left. A chunk whose
/// renderer panics is left to the walk: one thread would meet the panic
/// only if no newer chunk failed first, and so does the walk.
fn work(jobs: &Jobs<'_>, batch: &Batch) -> Done {
    let mut ready = Vec::new();
    while let Some(&index) = batch.todo.get(batch.next.fetch_add(1, Ordering::Relaxed)) {
        if let Ok(made) = catch_unwind(AssertUnwindSafe(|| make_ready(jobs, index))) {
            ready.push((index, made));
        }
    }
    ready
}

/// The chunk at `index` rendered under its cap, with the stub the walk
/// will ask for when it is disposable (and not an orphan result).
fn make_ready(jobs: &Jobs<'_>, index: usize) -> Ready {
    let chunk = &jobs.state.chunks[index];
    let (renderer, cap) = renderer_and_cap(jobs.settings, jobs.preparer, chunk);
    let prepared = jobs.preparer.prepare(index, chunk, renderer, cap);
    let retention = jobs
        .preparer
        .policy
        .retention_of(chunk, jobs.timeline.steps_after(index));
    let stubbed = retention == Retention::Disposable && !is_orphan_result(chunk, jobs.calls);
    let stub = match &prepared {
        Ok(ready) if ready.role != Role::System && stubbed => {
            Some(jobs.preparer.stub(chunk, renderer, &ready.part))
        }
        _ => None,
    };
    Ready { prepared, stub }
}

/// About how many bytes rendering `chunk` writes.
fn size_of_chunk(chunk: &MemoryChunk) -> usize {
    let text = chunk.text.as_ref().map_or(0, String::len);
    let data = chunk.data.as_ref().map_or(0, |d| d.as_str().len());
    text + data + chunk.content.as_ref().map_or(0, |c| 64 * c.len())
}
