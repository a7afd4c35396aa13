//! Counting one long text on several threads.
//!
//! An exact counter's counts add up at clean cuts (see
//! [`parts`](super::parts)), so a long text is cut near equal shares and
//! the shares counted at once, the caller's thread taking the first. Each
//! helper thread starts with an empty memo of recent pieces, so a share is
//! at least [`SHARE_MIN_BYTES`]: below that, starting a thread costs more
//! than it saves.

use super::TokenCounter;
use super::parts::next_cut;

/// The fewest bytes a thread is given to count.
const SHARE_MIN_BYTES: usize = 512 * 1024;
/// The most threads one count uses, as a build (`ContextBuilder::MAX_THREADS`).
const MAX_THREADS: usize = 64;

/// The tokens of `text`, counted on up to `threads()` threads (at most 64)
/// when it is long and `counter` is exact and adds up at clean cuts; on the
/// caller's thread otherwise. The count is the same either way. `threads`
/// is asked only for a long text: finding the machine's parallelism reads
/// the process's cgroup files, tens of microseconds, more than counting a
/// short text takes.
pub(crate) fn count_on_threads(
    counter: &dyn TokenCounter,
    text: &str,
    threads: impl FnOnce() -> usize,
) -> usize {
    let most = text.len() / SHARE_MIN_BYTES;
    if most < 2 || !counter.is_exact() || !counter.additive_at_clean_cuts() {
        return counter.count(text);
    }
    let shares = threads().min(MAX_THREADS).min(most);
    if shares < 2 {
        return counter.count(text);
    }
    let bounds = share_bounds(text, shares);
    // Loads the counter's tables here, before the helpers start: what
    // loading them frees stays in this thread's heap, for its own share to
    // reuse, instead of in a helper's (11 MiB more at the peak of 6 MB of
    // generated text, measured).
    counter.count("");
    std::thread::scope(|scope| {
        let helpers: Vec<_> = bounds
            .windows(2)
            .skip(1)
            .map(|share| scope.spawn(|| counter.count(&text[share[0]..share[1]])))
            .collect();
        let first = counter.count(&text[..bounds[1]]);
        // A helper panics only if the counter does, which it must not; its
        // share is then counted again here.
        helpers
            .into_iter()
            .zip(bounds.windows(2).skip(1))
            .map(|(helper, share)| {
                helper
                    .join()
                    .unwrap_or_else(|_| counter.count(&text[share[0]..share[1]]))
            })
            .sum::<usize>()
            + first
    })
}

/// `0`, the first clean cut at or after each `i * len / shares`, and the
/// end; fewer bounds where cuts are missing (a text of one long word).
fn share_bounds(text: &str, shares: usize) -> Vec<usize> {
    let mut bounds = vec![0];
    for share in 1..shares {
        let from = (text.len() / shares * share).max(bounds[bounds.len() - 1] + 1);
        if let Some(cut) = next_cut(text, from) {
            bounds.push(cut);
        }
    }
    bounds.push(text.len());
    bounds
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::parts::is_cut;
    use crate::tokens::{Encoding, EstimateCounter, TiktokenCounter};

    #[test]
    fn shares_end_at_cuts_and_count_what_the_whole_counts() {
        let text = "Line one of the log, with words.\n  indented {\"k\": 1}\n".repeat(60_000);
        let counter = TiktokenCounter::new(Encoding::O200kBase).unwrap();
        let bounds = share_bounds(&text, 4);
        assert_eq!(bounds.len(), 5);
        assert!(bounds[1..4].iter().all(|&at| is_cut(&text, at)));
        let whole = counter.count(&text);
        for threads in [1, 2, 3, 4] {
            assert_eq!(count_on_threads(&counter, &text, || threads), whole);
        }
    }

    #[test]
    fn a_short_text_never_asks_for_threads() {
        let counter = TiktokenCounter::new(Encoding::O200kBase).unwrap();
        let text = "word ".repeat(SHARE_MIN_BYTES / 5);
        let asked = || panic!("the threads of a short text were asked for");
        assert_eq!(
            count_on_threads(&counter, &text, asked),
            counter.count(&text)
        );
    }

    #[test]
    fn a_text_without_cuts_is_counted_whole() {
        let text = "ab".repeat(SHARE_MIN_BYTES * 2);
        assert_eq!(share_bounds(&text, 2), vec![0, text.len()]);
        let counter = TiktokenCounter::new(Encoding::O200kBase).unwrap();
        assert_eq!(
            count_on_threads(&counter, &text, || 2),
            counter.count(&text)
        );
    }

    #[test]
    fn estimates_are_never_split() {
        // Rounded up share by share, an estimate would grow.
        let text = "word ".repeat(SHARE_MIN_BYTES);
        let estimate = EstimateCounter::new().unwrap();
        assert_eq!(
            count_on_threads(&estimate, &text, || 4),
            estimate.count(&text)
        );
    }
}
