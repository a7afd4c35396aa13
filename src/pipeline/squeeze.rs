//! When the protected content does not fit, the newest tool use's results
//! and the compaction's summary are cut below their cap (head and tail,
//! with the exact marker), down to [`MIN_CAP`] tokens each, before a build
//! gives up: an agent whose last tool returned more than the window holds
//! still gets its next call.

use super::Build;
use super::history::History;
use crate::budget::{Layout, MIN_CAP, Planner};

/// The most times the shared cap is lowered by what still overflows
/// before the floor is tried (joins and markers make each guess a few
/// tokens short at most).
const GUESSES: usize = 6;

impl Build<'_> {
    /// The plan of `history`'s items; when the protected content does not
    /// fit, the newest tool use's results are cut to one shared cap, as
    /// high as the overflow allows and at least [`MIN_CAP`], and planned
    /// again. `Err` with the tokens the protected content needs with those
    /// results at the floor.
    pub(super) fn plan_fitting(
        &self,
        base: &Planner<'_>,
        history: &mut History<'_>,
    ) -> Result<Layout, usize> {
        let plan = |history: &History<'_>| {
            Planner {
                items: &history.items,
                ..base.clone()
            }
            .plan()
        };
        let mut required = match plan(history) {
            Ok(layout) => return Ok(layout),
            Err(required) => required,
        };
        let squeezable: Vec<(usize, usize)> = history
            .items
            .iter()
            .enumerate()
            .filter(|(_, item)| history.newest_results.contains(&item.chunk))
            .map(|(i, item)| (i, item.part.alone()))
            .filter(|&(_, tokens)| tokens > MIN_CAP)
            .collect();
        if squeezable.is_empty() {
            return Err(required);
        }
        let tokens: Vec<usize> = squeezable.iter().map(|&(_, t)| t).collect();
        let mut cut = 0;
        for guess in 0..=GUESSES {
            cut += required.saturating_sub(base.available).max(1);
            let cap = match guess {
                GUESSES => MIN_CAP,
                _ => shared_cap(&tokens, cut),
            };
            self.cut_results(history, &squeezable, cap);
            match plan(history) {
                Ok(layout) => return Ok(layout),
                Err(now) if cap == MIN_CAP => return Err(now),
                Err(now) => required = now,
            }
        }
        Err(required)
    }

    /// Renders the `squeezable` items (index and tokens as first planned)
    /// under `cap`, recording the cut in their decisions; one whose tag and
    /// marker alone cost more keeps its rendering.
    fn cut_results(&self, history: &mut History<'_>, squeezable: &[(usize, usize)], cap: usize) {
        for &(i, tokens) in squeezable.iter().filter(|&&(_, t)| t > cap) {
            let index = history.items[i].chunk;
            let chunk = &self.state.chunks[index];
            let renderer = self.settings.renderers.renderer_for(chunk);
            if let Ok(prepared) = self.preparer.prepare(index, chunk, renderer, Some(cap))
                && prepared.part.alone() < tokens
            {
                let decision = &mut history.decisions[index];
                decision.tokens = prepared.part.alone();
                decision.decision = prepared.decision;
                history.items[i].part = prepared.part;
            }
        }
    }
}

/// The highest cap shared by chunks of `tokens` tokens that cuts at least
/// `cut` tokens from them in all, and at least [`MIN_CAP`].
fn shared_cap(tokens: &[usize], cut: usize) -> usize {
    let cuts_enough =
        |cap: usize| tokens.iter().map(|t| t.saturating_sub(cap)).sum::<usize>() >= cut;
    let (mut lo, mut hi) = (MIN_CAP, tokens.iter().copied().max().unwrap_or(MIN_CAP));
    if !cuts_enough(lo) {
        return MIN_CAP;
    }
    // `lo` cuts enough, `hi` cuts nothing.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if cuts_enough(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::shared_cap;

    #[test]
    fn the_shared_cap_cuts_the_largest_first() {
        assert_eq!(shared_cap(&[1000, 200], 500), 500);
        assert_eq!(shared_cap(&[1000, 600], 500), 550);
        assert_eq!(shared_cap(&[1000], 5000), 64);
    }
}
