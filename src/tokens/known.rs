//! Counts of the short texts a build counts besides its chunks (the
//! system prompt, the role names of the framing, the elided-history
//! marker, stubs), carried from one process to the next.
//!
//! A stored chat keeps its chunks' counts, so a build in a fresh process
//! counts only these few texts, a few hundred bytes; loading the tables
//! to count them took most of such a build (about 45 ms of 65). A build
//! of a [`ContextEngine`](crate::ContextEngine) notes the counts it makes
//! of texts of at most [`MOST_BYTES`] bytes ([`Capture`]), but not those of
//! its chunks ([`uncaptured`]); the engine keeps the newest
//! [`MOST_TEXTS`] with the branch's build record, and an engine that
//! starts from that record hands them to the counter ([`remember`]), which
//! answers them without its tables while those are not loaded. Each is a
//! count the exact counter made, trusted as the store's chunk counts are.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::Encoding;

/// The longest text whose count is noted: a system prompt of a few
/// pages.
pub(crate) const MOST_BYTES: usize = 16 << 10;

/// The most counts an engine keeps: the newest noted.
pub(crate) const MOST_TEXTS: usize = 128;

/// The most bytes of text the counts an engine keeps hold together.
pub(crate) const MOST_TOTAL_BYTES: usize = 64 << 10;

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

/// The newest counts an engine noted or started from, newest first, at
/// most [`MOST_TEXTS`] of them and [`MOST_TOTAL_BYTES`] of text, each text
/// once per encoding.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct KnownCounts(Vec<KnownCount>);

impl KnownCounts {
    /// Whether it holds no count.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The counts, newest first.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = &KnownCount> + '_ {
        self.0.iter()
    }

    /// Puts `newest` (oldest first) before the counts kept, and keeps the
    /// newest that fit the limits.
    pub(crate) fn add(&mut self, newest: impl IntoIterator<Item = KnownCount>) {
        let mut newest: Vec<KnownCount> = newest.into_iter().collect();
        newest.reverse();
        let old = std::mem::take(&mut self.0);
        let mut bytes = 0;
        for count in newest.into_iter().chain(old) {
            if self.0.len() == MOST_TEXTS {
                break;
            }
            let seen =
                (self.0.iter()).any(|c| c.encoding == count.encoding && c.text == count.text);
            if !seen && bytes + count.text.len() <= MOST_TOTAL_BYTES {
                bytes += count.text.len();
                self.0.push(count);
            }
        }
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
    fn counts_keep_the_newest_once_each() {
        let mut known = KnownCounts::default();
        known.add([count("a", 1), count("b", 1)]);
        known.add([count("c", 1), count("a", 1)]);
        let texts: Vec<&str> = known.iter().map(|c| &*c.text).collect();
        assert_eq!(texts, ["a", "c", "b"]);
        known.add((0..MOST_TEXTS + 5).map(|i| count(&i.to_string(), 1)));
        assert_eq!(known.iter().count(), MOST_TEXTS);
        assert_eq!(
            &*known
                .iter()
                .next()
                .map(|c| c.text.clone())
                .unwrap_or_default(),
            "132"
        );
        // Past the bytes a record keeps, older counts go first.
        let long = |letter: &str| count(&letter.repeat(MOST_BYTES), 1);
        known.add([long("a"), long("b"), long("c"), long("d"), long("e")]);
        let firsts: Vec<char> = known.iter().filter_map(|c| c.text.chars().next()).collect();
        assert_eq!(firsts, ['e', 'd', 'c', 'b']);
    }
}
