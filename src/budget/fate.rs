//! [`Fate`]: what a plan makes of a history item, the one answer every
//! stage reads.

use crate::budget::units::{Step, Unit};

/// What a plan makes of an item of history: in the prompt whole (or as its
/// cap cut it), as its stub, or left out. The planner's layouts and
/// probes, the texts a build holds, and the cut a later build repeats all
/// speak of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Fate {
    #[default]
    Kept,
    Stubbed,
    Dropped,
}

/// The fate of each of `items` items once the ladder's `steps` apply: a
/// stub step stubs a kept item, a drop step drops its unit's items,
/// stubbed or not.
pub(crate) fn fates_after(steps: &[Step], units: &[Unit], items: usize) -> Vec<Fate> {
    let mut fates = vec![Fate::Kept; items];
    for step in steps {
        match *step {
            Step::Stub(i) if fates[i] == Fate::Kept => fates[i] = Fate::Stubbed,
            Step::Stub(_) => {}
            Step::Drop(unit) => units[unit]
                .items
                .iter()
                .for_each(|&i| fates[i] = Fate::Dropped),
        }
    }
    fates
}
