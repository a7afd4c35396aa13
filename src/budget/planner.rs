//! Choosing how much room to make: the fewest steps of the ladder that fit.

use std::sync::Arc;

use smallvec::SmallVec;

use crate::budget::elision::Elision;
use crate::budget::fate::{Fate, fates_after};
use crate::budget::units::{Item, Step, Unit};
use crate::model::roles::Role;
use crate::render::{ELIDED_TAG, Protocol, history_note};
use crate::tokens::parts::{CountedText, joined_tokens};
use crate::tokens::{Framing, TokenCounter};

/// Position of a role in per-role tables.
pub(crate) fn role_index(role: Role) -> usize {
    match role {
        Role::System => 0,
        Role::User => 1,
        Role::Assistant => 2,
    }
}

/// Framing tokens of a message of each role, indexed by [`role_index`].
pub(crate) fn framing_table(framing: Framing, counter: &dyn TokenCounter) -> [usize; 3] {
    [Role::System, Role::User, Role::Assistant].map(|role| framing.per_message(counter, role))
}

/// One part of a history message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// A kept item (index into the planner's items), stubbed or not.
    Item(usize),
    /// The elided-history marker (or summary).
    Marker,
    /// The history-start message of a user-first build.
    HistoryStart,
}

/// The planned prompt: which items are stubbed or dropped and how the rest
/// group into messages.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// History messages in order (the system message is the planner's `system` parts).
    pub(crate) messages: Vec<(Role, SmallVec<[Slot; 4]>)>,
    /// Per item, what the plan made of it.
    pub(crate) fates: Vec<Fate>,
    pub(crate) marker: Option<CountedText>,
    pub(crate) elision: Option<Elision>,
    /// Exact tokens of the whole prompt, framing included.
    pub(crate) total: usize,
    /// What the plan trimmed to, when it trimmed (see `BuildResult::trim_target`).
    pub(crate) trim_target: Option<usize>,
}

/// What every probe of one search shares.
struct Probe {
    /// Whether every part after the first in a message can start cleanly,
    /// so totals add up part by part.
    clean: bool,
    /// Tokens of the system message, which no step changes.
    system: usize,
}

/// Plans one build.
#[derive(Clone)]
pub(crate) struct Planner<'a> {
    pub(crate) counter: &'a dyn TokenCounter,
    /// Framing tokens of a message of each role, indexed by [`role_index`].
    pub(crate) framing: [usize; 3],
    pub(crate) priming: usize,
    pub(crate) system: &'a [Arc<CountedText>],
    pub(crate) items: &'a [Item],
    pub(crate) units: &'a [Unit],
    /// The ladder, in order.
    pub(crate) steps: &'a [Step],
    /// How many leading steps repeat the previous build's cut.
    pub(crate) sticky: usize,
    pub(crate) user_first: bool,
    pub(crate) available: usize,
    /// Trimming goes down to `available * low_water`.
    pub(crate) low_water: f64,
    /// Chunks dropped outside the plan (see `pipeline::frozen`), and
    /// their tokens: they count in the marker.
    pub(crate) frozen: (usize, usize),
    /// The item the marker goes before at the latest, when chunks older
    /// than some items were dropped outside the plan (see
    /// `pipeline::Outside`); `items.len()` puts it after them all.
    pub(crate) marker_at: Option<usize>,
    pub(crate) history_start: CountedText,
    /// How the marker is written into the history.
    pub(crate) protocol: Protocol,
}

impl Planner<'_> {
    /// The layout with the fewest steps that fits: the previous cut if it
    /// still fits, else the fewest steps beyond it that reach the low-water
    /// mark (or, failing that, the budget).
    ///
    /// # Errors
    ///
    /// The tokens the protected content needs, when it alone does not fit.
    pub(crate) fn plan(&self) -> Result<Layout, usize> {
        // With a previous cut, its layout is the usual answer and small:
        // build it. Without one, probe first: over budget, a layout of
        // everything is large and of no use.
        if self.sticky > 0 {
            let kept = self.layout(self.sticky, true);
            if kept.total <= self.available {
                return Ok(kept);
            }
        }
        let probe = self.probe();
        if self.sticky == 0 && self.total_at(&probe, 0, true) <= self.available {
            return Ok(self.layout(0, true));
        }
        let all = self.steps.len();
        let last = self.total_at(&probe, all, true);
        if last > self.available {
            let bare = self.layout(all, false);
            return if bare.total <= self.available {
                Ok(Layout {
                    trim_target: Some(self.available),
                    ..bare
                })
            } else {
                Err(bare.total)
            };
        }
        let target = trim_target(self.available, self.low_water, last);
        let total_at = |steps: usize| Some(self.total_at(&probe, steps, true));
        let steps =
            fewest_steps_within((self.sticky + 1, all, all), target, total_at).unwrap_or(all);
        let mut layout = self.layout(steps, true);
        layout.trim_target = Some(target);
        // The search trusted the probe; the tests hold the two to each other.
        debug_assert_eq!(
            layout.total,
            self.total_at(&probe, steps, true),
            "probe and layout disagree"
        );
        debug_assert_eq!(
            self.layout(all, true).total,
            last,
            "probe and layout disagree"
        );
        Ok(layout)
    }

    /// The total of [`layout`](Planner::layout)`(steps, with_marker)`
    /// without building it: the search probes many step counts, and a probe
    /// needs only the sum. Exact because every part after the first in a
    /// message starts cleanly (a part that does not is counted by building
    /// the layout, which recounts its message).
    fn total_at(&self, probe: &Probe, steps: usize, with_marker: bool) -> usize {
        if !probe.clean {
            return self.layout(steps, with_marker).total;
        }
        let (fates, chunks, tokens) = self.fates_at(steps);
        let marker = (with_marker && chunks > 0).then(|| self.marker(chunks, tokens));

        // Walk the parts in order, closing a message whenever the role changes.
        let mut total = 0;
        let mut first_role = None;
        // The open message: role, tokens of its parts but the last, and the
        // last part's (alone, followed by the separator).
        let mut open: Option<(Role, usize, usize, usize)> = None;
        let mut add = |role: Role, part: &CountedText| {
            let (alone, joined) = (part.alone(), part.joined());
            open = match open.take() {
                Some((current, sum, _, last_joined)) if current == role => {
                    Some((role, sum + last_joined, alone, joined))
                }
                Some((current, sum, last_alone, _)) => {
                    total += self.framing[role_index(current)] + sum + last_alone;
                    Some((role, 0, alone, joined))
                }
                None => {
                    first_role = Some(role);
                    Some((role, 0, alone, joined))
                }
            };
        };
        let mut marker_placed = marker.is_none();
        for (i, (item, &fate)) in self.items.iter().zip(&fates).enumerate() {
            if !marker_placed && self.marker_at == Some(i) {
                if let Some(marker) = &marker {
                    add(Role::User, marker);
                }
                marker_placed = true;
            }
            match fate {
                Fate::Dropped if !marker_placed => {
                    if let Some(marker) = &marker {
                        add(Role::User, marker);
                    }
                    marker_placed = true;
                }
                Fate::Dropped => {}
                Fate::Stubbed => add(item.role, item.stub.as_deref().unwrap_or(&item.part)),
                Fate::Kept => add(item.role, &item.part),
            }
        }
        if let Some(marker) = marker
            .as_ref()
            .filter(|_| !marker_placed && self.marker_at == Some(self.items.len()))
        {
            add(Role::User, marker);
        }
        if let Some((current, sum, last_alone, _)) = open {
            total += self.framing[role_index(current)] + sum + last_alone;
        }
        if self.user_first && first_role.is_some_and(|role| role != Role::User) {
            total += self.framing[role_index(Role::User)] + self.history_start.alone();
        }
        total += probe.system;
        let any = !self.system.is_empty() || first_role.is_some();
        if any { total + self.priming } else { 0 }
    }

    /// What every probe of one search shares, worked out once.
    fn probe(&self) -> Probe {
        let clean = all_start_clean(self.items);
        let system = if self.system.is_empty() {
            0
        } else {
            let parts: SmallVec<[&CountedText; 8]> = self.system.iter().map(|p| &**p).collect();
            self.message_tokens(Role::System, &parts)
        };
        Probe { clean, system }
    }

    /// The elided-history marker for `chunks` chunks of `tokens` tokens.
    fn marker(&self, chunks: usize, tokens: usize) -> CountedText {
        elided_marker(self.protocol, self.counter, (chunks, tokens))
    }

    /// Each item's fate after the first `steps` steps of the ladder, and
    /// the chunks dropped with their tokens (those outside the plan
    /// included).
    fn fates_at(&self, steps: usize) -> (Vec<Fate>, usize, usize) {
        let fates = fates_after(&self.steps[..steps], self.units, self.items.len());
        let dropped = self
            .items
            .iter()
            .zip(&fates)
            .filter(|(_, f)| **f == Fate::Dropped);
        let (chunks, tokens) = dropped.fold(self.frozen, |(chunks, tokens), (item, _)| {
            (chunks + 1, tokens + item.part.alone())
        });
        (fates, chunks, tokens)
    }

    /// The prompt with the first `steps` steps of the ladder applied.
    pub(crate) fn layout(&self, steps: usize, with_marker: bool) -> Layout {
        let (fates, chunks, tokens) = self.fates_at(steps);
        let marker = (with_marker && chunks > 0).then(|| self.marker(chunks, tokens));
        let elision = (chunks > 0).then_some(Elision {
            chunks,
            tokens,
            marker: marker.is_some(),
            summary: false,
        });

        let mut messages: Vec<(Role, SmallVec<[Slot; 4]>)> = Vec::new();
        let mut push = |role: Role, slot: Slot| match messages.last_mut() {
            Some((last, slots)) if *last == role => slots.push(slot),
            _ => messages.push((role, SmallVec::from_elem(slot, 1))),
        };
        let mut marker_placed = marker.is_none();
        for (i, item) in self.items.iter().enumerate() {
            if !marker_placed && self.marker_at == Some(i) {
                push(Role::User, Slot::Marker);
                marker_placed = true;
            }
            if fates[i] != Fate::Dropped {
                push(item.role, Slot::Item(i));
            } else if !marker_placed {
                push(Role::User, Slot::Marker);
                marker_placed = true;
            }
        }
        if !marker_placed && self.marker_at == Some(self.items.len()) {
            push(Role::User, Slot::Marker);
        }
        if self.user_first
            && messages
                .first()
                .is_some_and(|(role, _)| *role != Role::User)
        {
            messages.insert(0, (Role::User, SmallVec::from_elem(Slot::HistoryStart, 1)));
        }
        let mut layout = Layout {
            messages,
            fates,
            marker,
            elision,
            trim_target: None,
            total: 0,
        };
        layout.total = self.total(&layout);
        layout
    }

    /// Puts `marker` (a summary, say) in place of the layout's marker.
    pub(crate) fn replace_marker(&self, layout: &mut Layout, marker: CountedText) {
        layout.marker = Some(marker);
        layout.total = self.total(layout);
    }

    /// Exact tokens of the prompt a layout describes.
    fn total(&self, layout: &Layout) -> usize {
        let mut total = 0;
        if !self.system.is_empty() {
            let parts: SmallVec<[&CountedText; 8]> = self.system.iter().map(|p| &**p).collect();
            total += self.message_tokens(Role::System, &parts);
        }
        for (role, slots) in &layout.messages {
            let parts: SmallVec<[&CountedText; 8]> =
                slots.iter().map(|slot| self.part(layout, *slot)).collect();
            total += self.message_tokens(*role, &parts);
        }
        let any = !self.system.is_empty() || !layout.messages.is_empty();
        if any { total + self.priming } else { 0 }
    }

    /// Tokens of one message: framing plus content.
    pub(crate) fn message_tokens(&self, role: Role, parts: &[&CountedText]) -> usize {
        self.framing[role_index(role)] + joined_tokens(parts, self.counter)
    }

    /// The counted text a slot stands for.
    pub(crate) fn part<'l>(&'l self, layout: &'l Layout, slot: Slot) -> &'l CountedText {
        match slot {
            Slot::Item(i) => {
                let item = &self.items[i];
                match (&item.stub, layout.fates[i]) {
                    (Some(stub), Fate::Stubbed) => stub,
                    _ => &item.part,
                }
            }
            // A marker slot is only laid out together with its marker.
            Slot::Marker => layout.marker.as_ref().unwrap_or(&self.history_start),
            Slot::HistoryStart => &self.history_start,
        }
    }
}

/// The elided-history marker for `chunks` chunks of `tokens` tokens.
pub(crate) fn elided_marker(
    protocol: Protocol,
    counter: &dyn TokenCounter,
    (chunks, tokens): (usize, usize),
) -> CountedText {
    let text = format!("<{ELIDED_TAG} chunks=\"{chunks}\" tokens=\"{tokens}\"/>");
    CountedText::new(history_note(protocol, text), counter)
}

/// How far a trim of a prompt of `available` tokens goes: down to the
/// low-water mark, but never deeper than the fully trimmed prompt (of
/// `fully_trimmed` tokens) would sit at that mark. Without that floor a
/// session whose protected content is just above the mark would lose all
/// its history, and a larger budget could keep less (the target must grow
/// with the budget: it is continuous and non-decreasing in it). It is
/// non-decreasing in `fully_trimmed` too, and the mark itself at 0.
pub(crate) fn trim_target(available: usize, low_water: f64, fully_trimmed: usize) -> usize {
    let budget = available as f64;
    let mark = budget * low_water;
    let floor = budget.min(fully_trimmed as f64 / low_water);
    // Rounding down keeps the target within the budget.
    mark.max(floor) as usize
}

/// The fewest steps from `start` on whose total (`total_at`) is within
/// `limit`, where the total at `hi` (at most `len`, the ladder's length)
/// is.
///
/// Each step makes the prompt shorter, except that the first dropped unit
/// brings in the marker, so totals fall with the number of steps nearly
/// everywhere. The search gallops out from `start` (+0, +2, +6, +14, ...),
/// so every probe sits within about twice the answer's distance from it,
/// then halves; short scans cover the rare place where totals do not fall.
/// Probing near `start` lets a session's turn, whose answer is a few steps
/// past the last cut, work the totals out from those steps alone
/// (`pipeline::trim`). `None` when `total_at` has no answer for a probe.
pub(crate) fn fewest_steps_within(
    (start, mut hi, len): (usize, usize, usize),
    limit: usize,
    mut total_at: impl FnMut(usize) -> Option<usize>,
) -> Option<usize> {
    let (mut lo, mut stride) = (start, 1usize);
    loop {
        let probe = lo.saturating_add(stride - 1);
        if probe >= hi {
            break;
        }
        if total_at(probe)? <= limit {
            hi = probe;
            break;
        }
        lo = probe + 1;
        stride = stride.saturating_mul(2);
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if total_at(mid)? <= limit {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    // The marker can make one step cost more than it saves: look back
    // over it, then forward past any step the search jumped wrongly.
    while lo > start && total_at(lo - 1)? <= limit {
        lo -= 1;
    }
    while lo < len && total_at(lo)? > limit {
        lo += 1;
    }
    Some(lo)
}

/// Whether every item's body and stub starts cleanly after a separator, so
/// that message totals add up part by part and need no joined text.
pub(crate) fn all_start_clean(items: &[Item]) -> bool {
    items
        .iter()
        .all(|item| item.part.clean_start && item.stub.as_ref().is_none_or(|stub| stub.clean_start))
}
