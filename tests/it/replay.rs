//! Cache-stable trimming over a long replay: with the low-water mark and the
//! previous build passed in, the prompt prefix changes on at most 1 turn in 10.

// The example brings its own copy of the session generator, which the
// test binary also holds as `session_gen`.
#[allow(clippy::duplicate_mod)]
#[path = "../../examples/prefix_stability.rs"]
mod prefix_stability;

#[test]
fn the_prefix_changes_on_at_most_one_turn_in_ten() {
    let (turns, budget) = (200, 48_000);
    let with_mark = prefix_changes(turns, budget, 0.8);
    assert!(with_mark * 10 <= turns, "{with_mark} of {turns}");
    // Trimming exactly to the budget re-trims nearly every turn once full.
    let without = prefix_changes(turns, budget, 1.0);
    assert!(without > 5 * with_mark, "{without} vs {with_mark}");
}

use prefix_stability::prefix_changes;
