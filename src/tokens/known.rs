//! Counts of the short texts a build counts besides its chunks (the
//! system prompt, the role names of the framing, the elided-history
//! marker, stubs), carried from one process to the next.
//!
//! A stored chat keeps its chunks' counts, so a build in a fresh process
//! counts only these texts, a few hundred bytes to a few dozen KB;
//! loading the tables to count them took most of such a build (about 45
//! ms of 65). A build of a [`ContextEngine`](crate::ContextEngine) notes
//! the counts it makes or finds of texts of at most [`MOST_BYTES`] bytes
//! ([`Capture`]), but not those of its chunks ([`uncaptured`]), and the
//! branch's build record keeps them; an engine that starts from that
//! record hands them to the counter ([`remember`]), which answers them
//! without its tables while those are not loaded. A build in a fresh
//! process notes every such text it needs, so the next one finds them
//! all; a build that extends its engine's last notes only what it adds,
//! so a fresh process after it counts (and loads the tables) once. Each
//! count is one the exact counter made, trusted as the store's chunk
//! counts are.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

use rustc_hash::FxHashSet;

use super::Encoding;

/// The longest text whose count is noted: a system prompt of a few
/// pages.
pub(crate) const MOST_BYTES: usize = 16 << 10;

/// The most counts a build record keeps: enough for every stub of a
/// window of 128k tokens and the planner's trial markers.
pub(crate) const MOST_TEXTS: usize = 4_096;

/// The most bytes of text the counts a build record keeps hold together.
pub(crate) const MOST_TOTAL_BYTES: usize = 256 << 10;

/// A text's count by an encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KnownCount {
    pub(crate) encoding: Encoding,
    pub(crate) text: Box<str>,
    pub(crate) tokens: usize,
}

/// Captures under way on any thread: while there are none, which is
/// always for a [`ContextSession`](crate::ContextSession), noting costs a
/// load.
static CAPTURES: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The counts noted on this thread since the innermost [`Capture`]
    /// started, if one did.
    static NOTED: RefCell<Option<Vec<KnownCount>>> = const { RefCell::new(None) };
}

/// Notes that `encoding` counts `text` as `tokens`, when a [`Capture`] is
/// under way on this thread and the text is short.
pub(crate) fn note(encoding: Encoding, text: &str, tokens: usize) {
    if text.len() > MOST_BYTES || CAPTURES.load(Ordering::Relaxed) == 0 {
        return;
    }
    NOTED.with_borrow_mut(|noted| {
        if let Some(noted) = noted {
            noted.push(KnownCount {
                encoding,
                text: text.into(),
                tokens,
            });
        }
    });
}

/// Runs `count` with nothing noted: a chunk's counts are stored with it.
pub(crate) fn uncaptured<R>(count: impl FnOnce() -> R) -> R {
    if CAPTURES.load(Ordering::Relaxed) == 0 {
        return count();
    }
    let noted = NOTED.take();
    let counted = count();
    NOTED.set(noted);
    counted
}

/// The counts noted on this thread from [`start`](Capture::start) to
/// [`finish`](Capture::finish); the capture under way before, if any,
/// goes on after.
pub(crate) struct Capture {
    outer: Option<Option<Vec<KnownCount>>>,
}

impl Capture {
    pub(crate) fn start() -> Capture {
        CAPTURES.fetch_add(1, Ordering::Relaxed);
        Capture {
            outer: Some(NOTED.replace(Some(Vec::new()))),
        }
    }

    /// The counts noted, oldest first.
    pub(crate) fn finish(mut self) -> Vec<KnownCount> {
        let outer = self.outer.take().flatten();
        CAPTURES.fetch_sub(1, Ordering::Relaxed);
        NOTED.replace(outer).unwrap_or_default()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if let Some(outer) = self.outer.take() {
            CAPTURES.fetch_sub(1, Ordering::Relaxed);
            NOTED.set(outer);
        }
    }
}

/// The counts a build noted, each text once per encoding, in the order
/// first noted: at most [`MOST_TEXTS`] of them and [`MOST_TOTAL_BYTES`] of
/// text, the first noted kept (the system prompt and the framing come
/// before the planner's trial markers).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct KnownCounts(Vec<KnownCount>);

impl KnownCounts {
    /// The counts `noted`, as kept.
    pub(crate) fn of(noted: impl IntoIterator<Item = KnownCount>) -> KnownCounts {
        let mut seen: FxHashSet<(Encoding, Box<str>)> = FxHashSet::default();
        let (mut kept, mut bytes) = (Vec::new(), 0);
        for count in noted {
            if kept.len() == MOST_TEXTS {
                break;
            }
            if bytes + count.text.len() > MOST_TOTAL_BYTES {
                continue;
            }
            if seen.insert((count.encoding, count.text.clone())) {
                bytes += count.text.len();
                kept.push(count);
            }
        }
        KnownCounts(kept)
    }

    /// Whether it holds no count.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The counts, in the order first noted.
    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = &KnownCount> + '_ {
        self.0.iter()
    }
}

/// Hands `counts` to the exact counter of their encodings: each is
/// answered without the tables while they are not loaded.
pub(crate) fn remember(counts: &KnownCounts) {
    super::tiktoken::remember(counts.iter());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(text: &str, tokens: usize) -> KnownCount {
        KnownCount {
            encoding: Encoding::O200kBase,
            text: text.into(),
            tokens,
        }
    }

    #[test]
    fn a_capture_notes_short_texts_but_not_uncaptured_ones() {
        let capture = Capture::start();
        note(Encoding::O200kBase, "system", 1);
        uncaptured(|| note(Encoding::O200kBase, "a chunk's text", 4));
        note(Encoding::O200kBase, &"x".repeat(MOST_BYTES + 1), 9);
        let inner = Capture::start();
        note(Encoding::O200kBase, "inner", 1);
        assert_eq!(inner.finish(), vec![count("inner", 1)]);
        note(Encoding::O200kBase, "user", 1);
        assert_eq!(capture.finish(), vec![count("system", 1), count("user", 1)]);
        note(Encoding::O200kBase, "after", 1);
        assert_eq!(Capture::start().finish(), vec![]);
    }

    #[test]
    fn a_dropped_capture_gives_the_outer_one_back() {
        let outer = Capture::start();
        drop(Capture::start());
        note(Encoding::O200kBase, "kept", 1);
        assert_eq!(outer.finish(), vec![count("kept", 1)]);
    }

    #[test]
    fn a_build_keeps_the_first_noted_once_each_within_the_limits() {
        let known = KnownCounts::of([count("a", 1), count("b", 1), count("a", 1)]);
        let texts: Vec<&str> = known.iter().map(|c| &*c.text).collect();
        assert_eq!(texts, ["a", "b"]);
        let many = KnownCounts::of((0..MOST_TEXTS + 5).map(|i| count(&i.to_string(), 1)));
        assert_eq!(many.iter().count(), MOST_TEXTS);
        assert_eq!(many.iter().last().map(|c| &*c.text), Some("4095"));
        // Past the bytes a record keeps, later long texts are left out, and
        // short ones still fit.
        let long = |letter: char| count(&letter.to_string().repeat(MOST_BYTES - 1), 1);
        let noted = ('a'..='t').map(long).chain([count("x", 1)]);
        let firsts: Vec<char> = KnownCounts::of(noted)
            .iter()
            .filter_map(|c| c.text.chars().next())
            .collect();
        assert_eq!(firsts.len(), MOST_TOTAL_BYTES / MOST_BYTES + 1);
        assert_eq!(firsts.last(), Some(&'x'));
    }
}
