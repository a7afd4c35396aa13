//! Exact head+tail truncation of a body to a token cap.
//!
//! The tail is kept larger than the head: in a tool output it holds the error
//! message or the result. Cuts fall on character boundaries, and the marker
//! between head and tail states exactly how many tokens were cut:
//! `tokens(original) - tokens(head) - tokens(tail)`.

use crate::tokens::TokenCounter;

/// The floor of a cap on a chunk, in tokens: room for a tag with a few
/// attributes, the cut marker and a little of each end. A lower cap is
/// raised to it, with a warning.
pub(crate) const MIN_CAP: usize = 64;

/// The smallest cap [`truncate_to_cap`] cuts a bare body to.
pub(crate) const MIN_BODY_CAP: usize = 24;

/// A body shortened to its cap.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TruncatedBody {
    /// Head, marker and tail.
    pub text: String,
    /// Tokens of the original body.
    pub tokens_before: usize,
    /// Tokens of `text`; at most the cap.
    pub tokens_after: usize,
    /// Tokens of the original not in the head or the tail, as the marker states.
    pub tokens_cut: usize,
}

/// Shortens `body` to at most `cap` tokens (counted alone, with no tag
/// around it), keeping a head and a larger tail; `None` when it already
/// fits. Caps below 24 tokens are raised to 24.
pub fn truncate_to_cap(
    counter: &dyn TokenCounter,
    body: &str,
    cap: usize,
) -> Option<TruncatedBody> {
    let cap = cap.max(MIN_BODY_CAP);
    let before = counter.count(body);
    if before <= cap {
        return None;
    }
    Some(cut_body(counter, body, before, cap)).filter(|t| t.tokens_after <= cap)
}

/// `body` (of `before` tokens) cut to a head, the marker and a tail of at
/// most `cap` tokens in all, or, when even the marker does not fit, the
/// marker alone ([`marker_only`]).
pub(crate) fn cut_body(
    counter: &dyn TokenCounter,
    body: &str,
    before: usize,
    cap: usize,
) -> TruncatedBody {
    // Room for the ends: the cap minus the marker at its widest (the cut is
    // at most `before`), shrunk further if re-tokenizing the joins costs more.
    let mut room = cap.saturating_sub(counter.count(&marker(before)));
    loop {
        let head_budget = room / 3;
        let head_end = longest_prefix_within(counter, body, head_budget);
        let tail_start = shortest_suffix_within(counter, body, room - head_budget).max(head_end);
        let (head, tail) = (&body[..head_end], &body[tail_start..]);
        let cut = before.saturating_sub(counter.count(head) + counter.count(tail));
        let text = format!("{head}{}{tail}", marker(cut));
        let after = counter.count(&text);
        if after <= cap || room == 0 {
            return TruncatedBody {
                text,
                tokens_before: before,
                tokens_after: after,
                tokens_cut: cut,
            };
        }
        room = room.saturating_sub((after - cap).max(1));
    }
}

/// What a body of `before` tokens becomes when none of it can be kept: the
/// marker alone, the shortest a cut body gets.
pub(crate) fn marker_only(before: usize) -> String {
    marker(before)
}

fn marker(cut: usize) -> String {
    format!("\n[… {cut} tokens cut …]\n")
}

/// Bytes per token above which the searches stop looking: tokens are rarely
/// longer, so a head of `budget` tokens almost always lies within
/// `budget * SEARCH_BYTES_PER_TOKEN` bytes. (A wrong guess only shortens an
/// end; every result is still counted.) This keeps a 2 MB body cheap to cut.
const SEARCH_BYTES_PER_TOKEN: usize = 64;

/// The largest char boundary `b` with `tokens(body[..b]) <= budget`, searched
/// within the first `(budget + 1) * SEARCH_BYTES_PER_TOKEN` bytes.
fn longest_prefix_within(counter: &dyn TokenCounter, body: &str, budget: usize) -> usize {
    let limit = (budget + 1)
        .saturating_mul(SEARCH_BYTES_PER_TOKEN)
        .min(body.len());
    let (mut lo, mut hi) = (0, floor_boundary(body, limit));
    // Invariant: prefix to `lo` fits; prefix to `hi + 1..` is unknown or does not.
    while lo < hi {
        let mid = floor_boundary(body, lo + (hi - lo).div_ceil(2));
        if mid <= lo {
            // No char boundary strictly between: try the next one up.
            let next = ceil_boundary(body, lo + 1);
            if next <= hi && counter.count(&body[..next]) <= budget {
                lo = next;
                continue;
            }
            break;
        }
        if counter.count(&body[..mid]) <= budget {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// The smallest char boundary `a` with `tokens(body[a..]) <= budget`, searched
/// within the last `(budget + 1) * SEARCH_BYTES_PER_TOKEN` bytes.
fn shortest_suffix_within(counter: &dyn TokenCounter, body: &str, budget: usize) -> usize {
    let reach = (budget + 1).saturating_mul(SEARCH_BYTES_PER_TOKEN);
    let (mut lo, mut hi) = (
        ceil_boundary(body, body.len().saturating_sub(reach)),
        body.len(),
    );
    // Invariant: suffix from `hi` fits.
    while lo < hi {
        let mid = ceil_boundary(body, lo + (hi - lo) / 2);
        if mid >= hi {
            let prev = floor_boundary(body, hi - 1);
            if prev >= lo && counter.count(&body[prev..]) <= budget {
                hi = prev;
                continue;
            }
            break;
        }
        if counter.count(&body[mid..]) <= budget {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    hi
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, mut at: usize) -> usize {
    while at < text.len() && !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{Encoding, TiktokenCounter};

    #[test]
    fn keeps_head_and_tail_within_the_cap() {
        let counter = TiktokenCounter::new(Encoding::O200kBase).unwrap();
        let body: String = (0..2000)
            .map(|i| format!("line {i}: ok 漢字 🦀\n"))
            .collect::<String>()
            + "error[E0308]: mismatched types at src/lib.rs:42";
        for cap in [MIN_BODY_CAP, 50, 200, 1000] {
            let t = truncate_to_cap(&counter, &body, cap).unwrap();
            assert!(t.tokens_after <= cap, "{} > {cap}", t.tokens_after);
            assert_eq!(t.tokens_after, counter.count(&t.text));
            assert!(t.text.starts_with("line 0"), "{cap}");
            assert!(t.text.ends_with("src/lib.rs:42"), "{cap}");
            assert!(
                t.text
                    .contains(&format!("[… {} tokens cut …]", t.tokens_cut))
            );
        }
        assert!(truncate_to_cap(&counter, "short", 100).is_none());
    }
}
