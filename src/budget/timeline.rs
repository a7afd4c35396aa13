//! [`Timeline`]: a session's model calls (steps), its latest user message
//! and its newest tool use: what ages count and what is protected.
//!
//! A **step** is one model call: the run of assistant-side chunks it wrote
//! (thinking, text, tool calls, subagent spawns, outcomes) with the results
//! that answer its calls. A step starts at an assistant-side chunk that
//! follows a user-side one (a user message, a tool or subagent result) or
//! opens the session; system chunks belong to no side. Sides come from the
//! chunk's kind and action (the default tag table), whatever renders it.
//!
//! The **newest tool use** is the tool calls of the newest step that made
//! any, with their results (the chunks that share their `call_id`). With
//! the latest user message it is protected; everything between the two is
//! history like any older history, so an agent that runs a thousand tool
//! steps after one instruction never outgrows its window.

use imbl::shared_ptr::DefaultSharedPtr;
use imbl::vector::Focus;
use smallvec::SmallVec;

use super::rules::{answered_call, call_id_of, is_tool_use};

use crate::model::memory::MemoryChunk;
use crate::model::roles::{ChunkKind, Role};

/// Which side of the conversation wrote a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The model, in a model call.
    Assistant,
    /// The user, a tool or a subagent: what the next model call reads.
    User,
    /// Neither: system context.
    Neutral,
}

fn side(chunk: &MemoryChunk) -> Side {
    match chunk.kind {
        ChunkKind::System | ChunkKind::Compaction => Side::Neutral,
        ChunkKind::Agent if chunk.role == Some(Role::User) => Side::User,
        ChunkKind::Environment => Side::User,
        ChunkKind::Delegation => match chunk.action.as_deref() {
            Some("subagent_result" | "subagent_error") => Side::User,
            _ => Side::Assistant,
        },
        ChunkKind::Agent | ChunkKind::Workflow | ChunkKind::Thinking | ChunkKind::Output => {
            Side::Assistant
        }
    }
}

/// The steps, latest user message and newest tool use of a session's
/// selected chunks, fed in order with [`push`](Timeline::push); it grows
/// with a session (a chunk appended is one more push).
/// Whether the model reads `chunk` (a user message, a tool result, a
/// subagent's answer): a step starts at the first chunk it writes after one.
pub(crate) fn is_read(chunk: &MemoryChunk) -> bool {
    side(chunk) == Side::User
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Timeline {
    /// The index of each step's first chunk, ascending. A session's turn
    /// copies its last build's timeline and adds its own steps: a shared
    /// tree makes that copy cost a leaf, where a `Vec` cost every step of
    /// the session.
    step_starts: imbl::Vector<usize>,
    /// Whether the last chunk with a side was the assistant's.
    in_step: bool,
    latest_user: Option<usize>,
    /// The newest tool use: the tool calls' indexes and call ids.
    newest_use: SmallVec<[(usize, Option<Box<str>>); 2]>,
    /// The step the newest tool use belongs to (its index in `step_starts`).
    newest_use_step: usize,
}

/// The most steps [`Ages::of`] walks before it searches instead.
const STEPS_WALKED: usize = 16;

/// A cursor over a [`Timeline`]'s steps: the ages of chunks in
/// ascending order (see [`Timeline::ages`]).
pub(crate) struct Ages<'t> {
    /// Keeps the leaf of the steps last read: a pass in order reads each
    /// leaf once.
    starts: Focus<'t, usize, DefaultSharedPtr>,
    /// How many steps start at or before the last chunk asked for.
    passed: usize,
}

impl Ages<'_> {
    /// The age of the chunk at `index`: the steps it passes are walked
    /// when they are few, and sought when it is before the last chunk
    /// asked for or many steps past it (the first chunk of a window may
    /// be thousands of steps into the session).
    pub(crate) fn of(&mut self, index: usize) -> usize {
        let last_passed = self.passed.checked_sub(1);
        let last_start = last_passed.and_then(|last| self.starts.get(last));
        if last_start.is_none_or(|&start| start <= index) {
            for _ in 0..STEPS_WALKED {
                if self.starts.get(self.passed).is_none_or(|&s| s > index) {
                    return self.starts.len() - self.passed;
                }
                self.passed += 1;
            }
        }
        self.passed = starts_up_to(&mut self.starts, index);
        self.starts.len() - self.passed
    }
}

/// How many of the step starts `starts` are at or before the chunk at
/// `index`: a search by leaf of the tree, then in the leaf, which reads the
/// tree a few times where a search by step read it at every probe.
fn starts_up_to(starts: &mut Focus<'_, usize, DefaultSharedPtr>, index: usize) -> usize {
    // The answer lies in `low..=high`.
    let (mut low, mut high) = (0, starts.len());
    while low < high {
        let (leaf_range, leaf) = starts.chunk_at(low + (high - low) / 2);
        match (leaf.first(), leaf.last()) {
            (_, Some(&last)) if last <= index => low = leaf_range.end,
            (Some(&first), _) if first > index => high = leaf_range.start,
            _ => return leaf_range.start + leaf.partition_point(|&start| start <= index),
        }
    }
    low
}

impl Timeline {
    /// The timeline of `chunks`, of which `selected` says which count.
    pub(crate) fn of(chunks: &[MemoryChunk], selected: impl Fn(usize) -> bool) -> Self {
        let mut timeline = Timeline::default();
        for (index, chunk) in chunks.iter().enumerate() {
            if selected(index) {
                timeline.push(index, chunk);
            }
        }
        timeline
    }

    /// Takes in the selected chunk at `index`, newer than any before.
    pub(crate) fn push(&mut self, index: usize, chunk: &MemoryChunk) {
        match side(chunk) {
            Side::Neutral => return,
            Side::User => self.in_step = false,
            Side::Assistant if !self.in_step => {
                self.step_starts.push_back(index);
                self.in_step = true;
            }
            Side::Assistant => {}
        }
        if chunk.is_user_turn() {
            self.latest_user = Some(index);
        }
        if is_tool_use(chunk) {
            let step = self.step_starts.len() - 1;
            if self.newest_use.is_empty() || self.newest_use_step != step {
                self.newest_use.clear();
                self.newest_use_step = step;
            }
            let call = call_id_of(chunk).map(Box::from);
            self.newest_use.push((index, call));
        }
    }

    /// How many model calls start after the chunk at `index`: its age.
    pub(crate) fn steps_after(&self, index: usize) -> usize {
        self.step_starts.len() - starts_up_to(&mut self.step_starts.focus(), index)
    }

    /// The first chunk fewer than `steps` steps old: those before it are
    /// at least that old, and stay so as steps are added. `usize::MAX`
    /// when `steps` is 0 (no chunk is younger).
    pub(crate) fn young_from(&self, steps: usize) -> usize {
        let starts = &self.step_starts;
        (starts.len().checked_sub(steps))
            .map_or(0, |s| starts.get(s).copied().unwrap_or(usize::MAX))
    }

    /// The ages ([`steps_after`](Timeline::steps_after)) of chunks asked
    /// for in ascending order, each in constant time (amortized) when they
    /// are near one another, where a search costs a logarithm: for a pass
    /// over the window.
    pub(crate) fn ages(&self) -> Ages<'_> {
        Ages {
            starts: self.step_starts.focus(),
            passed: 0,
        }
    }

    /// The latest user message.
    pub(crate) fn latest_user(&self) -> Option<usize> {
        self.latest_user
    }

    /// Whether the chunk at `index` is protected by its place: the latest
    /// user message, a call of the newest tool use, or a result of one.
    pub(crate) fn anchors(&self, index: usize, chunk: &MemoryChunk) -> bool {
        if self.latest_user == Some(index) {
            return true;
        }
        if is_tool_use(chunk) {
            return self.newest_use.iter().any(|(call, _)| *call == index);
        }
        answered_call(chunk).is_some_and(|id| {
            self.newest_use
                .iter()
                .any(|(call, call_id)| *call < index && call_id.as_deref() == Some(id))
        })
    }

    /// The calls of the newest tool use: their indexes and call ids.
    pub(crate) fn newest_calls(&self) -> impl Iterator<Item = (usize, Option<&str>)> {
        self.newest_use
            .iter()
            .map(|(call, id)| (*call, id.as_deref()))
    }

    /// The index of each step's first chunk, ascending.
    pub(crate) fn step_starts(&self) -> impl Iterator<Item = usize> + '_ {
        self.step_starts.iter().copied()
    }

    /// Where the step of the newest tool use starts, if there is one.
    pub(crate) fn newest_use_start(&self) -> Option<usize> {
        let step = (!self.newest_use.is_empty()).then_some(self.newest_use_step)?;
        self.step_starts.get(step).copied()
    }

    /// Whether `other`'s newest tool use is this one's.
    pub(crate) fn same_newest_use(&self, other: &Timeline) -> bool {
        self.newest_use == other.newest_use
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(spec: &str) -> Vec<MemoryChunk> {
        // u: user, t: thinking, c: call, r: result, a: assistant text, s: system
        spec.chars()
            .enumerate()
            .map(|(i, c)| {
                let id = format!("c{i}");
                match c {
                    'u' => MemoryChunk::agent(id, Role::User, "x"),
                    'a' => MemoryChunk::agent(id, Role::Assistant, "x"),
                    't' => MemoryChunk::new(id, ChunkKind::Thinking),
                    's' => MemoryChunk::new(id, ChunkKind::System),
                    'c' => MemoryChunk::new(id, ChunkKind::Workflow).with_call_id(format!("k{i}")),
                    'r' => {
                        // Answers the nearest call before it.
                        let call = spec[..i].rfind('c').unwrap_or(0);
                        MemoryChunk::new(id, ChunkKind::Environment)
                            .with_call_id(format!("k{call}"))
                    }
                    _ => unreachable!(),
                }
            })
            .collect()
    }

    #[test]
    fn steps_start_where_the_model_speaks_after_a_reader() {
        let chunks = chunks("utcrtcrsa");
        let timeline = Timeline::of(&chunks, |_| true);
        assert_eq!(timeline.step_starts().collect::<Vec<_>>(), [1, 4, 8]);
        assert_eq!(timeline.steps_after(3), 2);
        assert_eq!(timeline.steps_after(6), 1);
        assert_eq!(timeline.steps_after(8), 0);
        let mut ages = timeline.ages();
        let forward: Vec<usize> = (0..10).map(|index| ages.of(index)).collect();
        let sought: Vec<usize> = (0..10).map(|index| timeline.steps_after(index)).collect();
        assert_eq!(forward, sought, "read forward");
        assert_eq!(
            (ages.of(3), ages.of(9), ages.of(0)),
            (2, 0, sought[0]),
            "read back"
        );
        assert_eq!(timeline.latest_user(), Some(0));
        for steps in 0..5 {
            let young = timeline.young_from(steps);
            let aged = |index: usize| timeline.steps_after(index) >= steps;
            assert!(
                (0..9).all(|index| aged(index) == (index < young)),
                "{steps} steps"
            );
        }
    }

    #[test]
    fn ages_hold_over_many_leaves_of_steps() {
        // Steps of one to three chunks, 1,000 of them: many leaves of the
        // tree, grown turn by turn from shared copies as a session does.
        let spec: String = (0..1_000).map(|i| ["ut", "utr", "utcr"][i % 3]).collect();
        let chunks = chunks(&spec);
        let mut timeline = Timeline::default();
        let mut copies = Vec::new();
        for (index, chunk) in chunks.iter().enumerate() {
            if index % 100 == 0 {
                copies.push((timeline.clone(), timeline.step_starts().count()));
            }
            timeline.push(index, chunk);
        }
        for (copy, steps) in copies {
            assert_eq!(copy.step_starts().count(), steps, "a copy grew");
        }
        let starts: Vec<usize> = timeline.step_starts().collect();
        assert_eq!(starts.len(), 1_000);
        let mut ages = timeline.ages();
        for index in 0..chunks.len() + 2 {
            let expected = starts.len() - starts.partition_point(|&start| start <= index);
            assert_eq!(timeline.steps_after(index), expected, "chunk {index}");
            assert_eq!(ages.of(index), expected, "chunk {index}, read forward");
        }
        for index in (0..chunks.len()).step_by(97).rev() {
            assert_eq!(
                ages.of(index),
                timeline.steps_after(index),
                "chunk {index}, read back"
            );
        }
        // Far apart, as a window that starts deep in the session.
        let mut ages = timeline.ages();
        for index in (5..chunks.len()).step_by(301) {
            assert_eq!(
                ages.of(index),
                timeline.steps_after(index),
                "chunk {index}, read far ahead"
            );
        }
    }

    #[test]
    fn the_newest_tool_use_is_the_last_step_with_calls() {
        let chunks = chunks("utcrtccrra");
        let timeline = Timeline::of(&chunks, |_| true);
        let anchored: Vec<usize> = (0..chunks.len())
            .filter(|&i| timeline.anchors(i, &chunks[i]))
            .collect();
        assert_eq!(anchored, [0, 5, 6, 7, 8]);
    }
}
