//! Exact counts of text that is joined with separators after counting.
//!
//! A message is its parts (system prompt, chunks, markers) joined by a blank
//! line, and which parts end up side by side depends on what the budget keeps.
//! BPE merges across boundaries, so counts of parts do not simply add up. They
//! do add up at a *clean cut*: a position right after `\n` whose next
//! character is neither whitespace nor `/`. No pre-tokenizer piece of
//! `cl100k_base` or `o200k_base` spans such a cut, and no piece before it
//! looks past it (docs/counting.md explains the argument; tests check sum ==
//! recount). They also add up right after an ASCII letter or digit that
//! ASCII whitespace or punctuation other than `'` follows: letter and digit
//! pieces never take those in, and whatever piece starts with them starts
//! there ([`is_cut`] holds both rules).
//!
//! Every part is therefore counted as a head up to its last cut (once) and
//! a short tail (twice: alone, and followed by the separator): for a tagged
//! chunk, the closing `>`. Such tails repeat from part to part and their
//! counts are memoized, so the tail costs no tokenizer call, and a body of
//! any length is counted once.

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
        let cut = last_cut(&text);
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

    /// Tokens of the text up to its last cut ([`is_cut`]): what stays the
    /// same when more text follows it.
    pub(crate) fn head(&self) -> usize {
        self.head
    }

    /// Tokens of the text followed by the separator.
    pub(crate) fn joined(&self) -> usize {
        self.head + self.tail_joined
    }

    /// Tokens of the text in a message that goes on after it (`followed`:
    /// [`joined`](CountedText::joined)) or ends with it
    /// ([`alone`](CountedText::alone)).
    pub(crate) fn in_message(&self, followed: bool) -> usize {
        if followed {
            self.joined()
        } else {
            self.alone()
        }
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

/// Whether the pieces of `text` end at `at` and the text from `at` on is
/// pre-tokenized as if it stood alone, so that counts add up there: a clean
/// cut, or a cut after an ASCII letter or
/// digit before ASCII whitespace or punctuation other than `'`. A letter
/// piece ends at its last letter (only a contraction, which starts with
/// `'`, may follow it), a digit piece takes nothing but digits, and
/// whatever piece starts with a space or a punctuation mark starts there;
/// no piece before the cut looks past it.
pub(super) fn is_cut(text: &str, at: usize) -> bool {
    let bytes = text.as_bytes();
    if at == 0 || at >= bytes.len() {
        return false;
    }
    let (before, after) = (bytes[at - 1], bytes[at]);
    (before == b'\n' && starts_clean(&text[at..]))
        || (before.is_ascii_alphanumeric()
            && (after.is_ascii_whitespace() || (after.is_ascii_punctuation() && after != b'\'')))
}

/// Byte offset of the first cut at or after `at` (see [`is_cut`]).
pub(super) fn next_cut(text: &str, at: usize) -> Option<usize> {
    (at..text.len()).find(|&i| is_cut(text, i))
}

/// Byte offset of the last cut in `text` (see [`is_cut`]), else 0.
fn last_cut(text: &str) -> usize {
    (1..text.len())
        .rev()
        .find(|&at| is_cut(text, at))
        .unwrap_or(0)
}

/// Tokens of `inner`, found in the text of `whole`, from the counts of
/// `whole` and of what lies around `inner` there: exact when `inner` starts
/// and ends at cuts ([`is_cut`]) and the counter adds up at them; `None`
/// otherwise (an estimate, a released text, `inner` not found or not
/// between cuts). A long body inside its rendered chunk is then counted
/// once.
pub(crate) fn count_within(
    whole: &CountedText,
    inner: &str,
    counter: &dyn TokenCounter,
) -> Option<usize> {
    if whole.released || !counter.is_exact() || !counter.additive_at_clean_cuts() {
        return None;
    }
    let text = whole.text.as_str();
    let start = text.find(inner)?;
    let end = start + inner.len();
    let at_cut = |at: usize| at == 0 || at == text.len() || is_cut(text, at);
    if !(at_cut(start) && at_cut(end)) {
        return None;
    }
    let around = counter.count(&text[..start]) + counter.count(&text[end..]);
    whole.alone().checked_sub(around)
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
    fn cuts_fall_after_a_newline_before_a_tag_or_after_a_word() {
        assert_eq!(last_cut("<a>\nbody\n</a>"), 12);
        assert_eq!(last_cut("<a/>"), 2);
        assert_eq!(last_cut("<t id=\"x\" elided=\"5 tokens\"/>"), 26);
        assert_eq!(last_cut("x\n /y\n/z"), 5);
        assert_eq!(last_cut("it's'"), 0);
        assert_eq!(last_cut("é\"/>"), 0);
        assert_eq!(last_cut("<>"), 0);
    }

    #[test]
    fn a_body_between_cuts_is_counted_from_its_rendering() {
        let counter = TiktokenCounter::new(Encoding::O200kBase).unwrap();
        let bodies = [
            "A".repeat(5000),
            "x = 1;\nfoo bar".into(),
            "  spaced".into(),
        ];
        for body in &bodies {
            for (open, close) in [("<r id=\"a\">\n", "\n</r>"), ("", ""), ("<r>", " tail.")] {
                let rendered = CountedText::new(format!("{open}{body}{close}"), &counter);
                if let Some(tokens) = count_within(&rendered, body, &counter) {
                    assert_eq!(tokens, counter.count(body), "{open:?} {body:?}");
                }
            }
        }
        let tagged = CountedText::new(format!("<r>\n{}\n</r>", bodies[0]), &counter);
        assert_eq!(count_within(&tagged, &bodies[0], &counter), Some(625));
        // `<r>AAA`: the tag's `>` and the letters are not apart.
        let glued = CountedText::new(format!("<r>{}", bodies[0]), &counter);
        assert_eq!(count_within(&glued, &bodies[0], &counter), None);
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
