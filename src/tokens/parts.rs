//! Exact counts of text that is joined with separators after counting.
//!
//! A message is its parts (system prompt, chunks, markers) joined by a blank
//! line, and which parts end up side by side depends on what the budget keeps.
//! BPE merges across boundaries, so counts of parts do not simply add up. They
//! do add up at a *clean cut*: a position right after `\n` whose next
//! character is neither whitespace nor `/`. No pre-tokenizer piece of
//! `cl100k_base` or `o200k_base` spans such a cut, and no piece before it
//! looks past it (the README explains the argument; tests check sum ==
//! recount). Every part is therefore counted as a head up to its last clean
//! cut (once) and a short tail (twice: alone, and followed by the separator).
//!
//! A part with no newline (a stub, a marker) has a second exact cut: before
//! a final run of ASCII punctuation (no `'`) that follows an ASCII letter or
//! digit, as in `… tokens"/>`. Letter and digit pieces never take in
//! punctuation other than `'`, and the run becomes one piece of its own, with
//! or without the separator after it. Such tails repeat from part to part and
//! their counts are memoized, so a stub costs one tokenizer call, not two.

use crate::tokens::TokenCounter;

/// What parts of a message are joined with.
pub(crate) const SEPARATOR: &str = "\n\n";

/// A part of a message with its exact counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CountedText {
    pub(crate) text: String,
    head: usize,
    tail_alone: usize,
    tail_joined: usize,
    /// Whether a separator before this part ends at a clean cut (and the
    /// counter adds up there), so a message can be counted by its parts.
    pub(crate) clean_start: bool,
    /// Whether `text` was let go to save memory, keeping only the counts
    /// (a build does this for what its prompt will not show).
    released: bool,
}

impl CountedText {
    pub(crate) fn new(text: String, counter: &dyn TokenCounter) -> Self {
        if !counter.additive_at_clean_cuts() {
            // Counted whole; `clean_start: false` makes every message that
            // holds it be counted whole too.
            let joined = format!("{text}{SEPARATOR}");
            return CountedText {
                head: 0,
                tail_alone: counter.count(&text),
                tail_joined: counter.count(&joined),
                clean_start: false,
                released: false,
                text,
            };
        }
        let cut = last_clean_cut(&text);
        let (head, tail) = text.split_at(cut);
        CountedText {
            head: counter.count(head),
            tail_alone: counter.count(tail),
            tail_joined: count_joined(tail, counter),
            clean_start: starts_clean(&text),
            released: false,
            text,
        }
    }

    /// The same counts without the text.
    pub(crate) fn released(&self) -> CountedText {
        CountedText {
            text: String::new(),
            released: true,
            ..*self
        }
    }

    /// Counts kept elsewhere (a store), without the text: `[head,
    /// tail_alone, tail_joined]` and `clean_start`, as
    /// [`counts`](CountedText::counts) gave them.
    pub(crate) fn from_counts(
        [head, tail_alone, tail_joined]: [usize; 3],
        clean_start: bool,
    ) -> Self {
        CountedText {
            text: String::new(),
            head,
            tail_alone,
            tail_joined,
            clean_start,
            released: true,
        }
    }

    /// The counts a store keeps: `[head, tail_alone, tail_joined]`.
    pub(crate) fn counts(&self) -> [usize; 3] {
        [self.head, self.tail_alone, self.tail_joined]
    }

    /// The text these counts were made of, given back: the caller
    /// rendered it again with the settings it was counted under.
    pub(crate) fn with_text(&self, text: String) -> CountedText {
        CountedText {
            text,
            released: false,
            ..*self
        }
    }

    /// Whether the text was let go (see [`released`](CountedText::released)).
    pub(crate) fn is_released(&self) -> bool {
        self.released
    }

    /// Tokens of the text alone (last in its message).
    pub(crate) fn alone(&self) -> usize {
        self.head + self.tail_alone
    }

    /// Tokens of the text up to its last clean cut: what stays the same when
    /// more text follows it.
    pub(crate) fn head(&self) -> usize {
        self.head
    }

    /// Tokens of the text followed by the separator.
    pub(crate) fn joined(&self) -> usize {
        self.head + self.tail_joined
    }
}

/// Tokens of `tail` followed by the separator. Tails are mostly closing tags,
/// so a short one is put together on the stack.
fn count_joined(tail: &str, counter: &dyn TokenCounter) -> usize {
    const STACK: usize = 64;
    let len = tail.len() + SEPARATOR.len();
    if len > STACK {
        return counter.count(&format!("{tail}{SEPARATOR}"));
    }
    let mut buffer = [0u8; STACK];
    buffer[..tail.len()].copy_from_slice(tail.as_bytes());
    buffer[tail.len()..len].copy_from_slice(SEPARATOR.as_bytes());
    // Two strings laid end to end are a string.
    let joined = std::str::from_utf8(&buffer[..len]).unwrap_or_default();
    counter.count(joined)
}

/// Whether a separator followed by `text` ends at a clean cut.
pub(super) fn starts_clean(text: &str) -> bool {
    text.chars()
        .next()
        .is_some_and(|c| !c.is_whitespace() && c != '/')
}

/// Byte offset of the last clean cut in `text`, else of the cut before a
/// final punctuation run, else 0.
fn last_clean_cut(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut search_end = bytes.len();
    while let Some(newline) = bytes[..search_end].iter().rposition(|&b| b == b'\n') {
        if starts_clean(&text[newline + 1..]) {
            return newline + 1;
        }
        search_end = newline;
    }
    punctuation_tail_cut(bytes)
}

/// The start of a final run of ASCII punctuation other than `'` that follows
/// an ASCII letter or digit, or 0.
fn punctuation_tail_cut(bytes: &[u8]) -> usize {
    let is_tail = |b: &u8| b.is_ascii_punctuation() && *b != b'\'';
    let run = bytes.iter().rev().take_while(|b| is_tail(b)).count();
    let cut = bytes.len() - run;
    let after_word = cut > 0 && bytes[cut - 1].is_ascii_alphanumeric();
    if run > 0 && after_word { cut } else { 0 }
}

/// Exact content tokens of `parts` joined by [`SEPARATOR`].
pub(crate) fn joined_tokens(parts: &[&CountedText], counter: &dyn TokenCounter) -> usize {
    let Some((last, rest)) = parts.split_last() else {
        return 0;
    };
    if parts.iter().skip(1).all(|p| p.clean_start) {
        rest.iter().map(|p| p.joined()).sum::<usize>() + last.alone()
    } else {
        // A custom renderer produced a part that BPE could merge with the
        // separator before it: count the assembled text instead.
        counter.count(&join(parts))
    }
}

/// The parts' text joined by [`SEPARATOR`].
pub(crate) fn join(parts: &[&CountedText]) -> String {
    let len = parts.iter().map(|p| p.text.len() + SEPARATOR.len()).sum();
    let mut out = String::with_capacity(len);
    for (i, part) in parts.iter().enumerate() {
        debug_assert!(!part.released, "a released part was joined");
        if i > 0 {
            out.push_str(SEPARATOR);
        }
        out.push_str(&part.text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{Encoding, TiktokenCounter};

    #[test]
    fn cuts_fall_after_a_newline_before_a_tag_or_before_final_punctuation() {
        assert_eq!(last_clean_cut("<a>\nbody\n</a>"), 9);
        assert_eq!(last_clean_cut("<a/>"), 2);
        assert_eq!(last_clean_cut("<t id=\"x\" elided=\"5 tokens\"/>"), 26);
        assert_eq!(last_clean_cut("x\n /y\n/z"), 0);
        assert_eq!(last_clean_cut("it's'"), 0);
        assert_eq!(last_clean_cut("é\"/>"), 0);
        assert_eq!(last_clean_cut("<>"), 0);
    }

    #[test]
    fn part_counts_add_up_to_the_recount() {
        let texts = [
            "<thinking id=\"t\" elided=\"12 tokens\"/>",
            "<tool_result id=\"r-1\" call_id=\"k\" success=\"true\" elided=\"901 tokens\"/>",
            "ends in a word, then punctuation ?!)]}>/",
            "<elided_history chunks=\"3\" tokens=\"45\"/>",
            "system prompt ending in spaces  \n",
            "<tool_result id=\"a\">\n{\"x\": 1}\n</tool_result>",
            "<thinking id=\"t\"/>",
            "<user_message id=\"u\">\nhi there.\n\n\n</user_message>",
            "plain text with no tag at all",
        ];
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let counter = TiktokenCounter::new(encoding).unwrap();
            let parts: Vec<_> = texts
                .iter()
                .map(|t| CountedText::new((*t).into(), &counter))
                .collect();
            let refs: Vec<_> = parts.iter().collect();
            assert_eq!(joined_tokens(&refs, &counter), counter.count(&join(&refs)));
        }
    }
}
