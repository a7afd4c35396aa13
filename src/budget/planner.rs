//! Choosing what to drop: the fewest oldest units that make the prompt fit.

use smallvec::SmallVec;

use crate::budget::units::{Item, Unit};
use crate::memory::Role;
use crate::message::Elision;
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

/// Tag of the marker that stands for dropped history.
pub(crate) const ELIDED_TAG: &str = "elided_history";
/// Tag of the user message put first when history would start with the assistant.
pub(crate) const HISTORY_START_TAG: &str = "history_start";

/// One part of a history message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// A kept item (index into the planner's items).
    Item(usize),
    /// The elided-history marker.
    Marker,
    /// The history-start message of a user-first build.
    HistoryStart,
}

/// The planned prompt: which items are dropped and how the rest group into messages.
#[derive(Debug)]
pub(crate) struct Layout {
    /// History messages in order (the system message is the planner's `system` parts).
    pub(crate) messages: Vec<(Role, SmallVec<[Slot; 4]>)>,
    pub(crate) dropped: Vec<bool>,
    pub(crate) marker: Option<CountedText>,
    pub(crate) elision: Option<Elision>,
    /// Exact tokens of the whole prompt, framing included.
    pub(crate) total: usize,
}

/// Plans one build.
pub(crate) struct Planner<'a> {
    pub(crate) counter: &'a dyn TokenCounter,
    /// Framing tokens of a message of each role, indexed by [`role_index`].
    pub(crate) framing: [usize; 3],
    pub(crate) priming: usize,
    pub(crate) system: &'a [CountedText],
    pub(crate) items: &'a [Item],
    pub(crate) units: &'a [crate::budget::units::Unit],
    pub(crate) user_first: bool,
    pub(crate) available: usize,
    pub(crate) history_start: CountedText,
}

impl Planner<'_> {
    /// The layout that fits with the fewest oldest units dropped.
    ///
    /// Dropping more never makes the prompt longer once the marker is in
    /// (each unit costs more than the marker's digits can grow), so a binary
    /// search over "drop the k oldest droppable units" finds the fewest; the
    /// result is checked against the budget regardless.
    ///
    /// # Errors
    ///
    /// The tokens the protected content needs, when it alone does not fit.
    pub(crate) fn plan(&self) -> Result<Layout, usize> {
        let droppable: Vec<&Unit> = self.units.iter().filter(|u| !u.protected).collect();
        let whole = self.layout(&droppable[..0], true);
        if whole.total <= self.available {
            return Ok(whole);
        }
        let all = self.layout(&droppable, true);
        if all.total > self.available {
            let bare = self.layout(&droppable, false);
            if bare.total <= self.available {
                return Ok(bare);
            }
            return Err(bare.total);
        }
        let (mut lo, mut hi) = (1, droppable.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.layout(&droppable[..mid], true).total <= self.available {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let found = self.layout(&droppable[..lo], true);
        Ok(if found.total <= self.available {
            found
        } else {
            all
        })
    }

    /// The prompt with `dropped` units left out.
    fn layout(&self, dropped_units: &[&Unit], with_marker: bool) -> Layout {
        let mut dropped = vec![false; self.items.len()];
        let (mut chunks, mut tokens) = (0, 0);
        for unit in dropped_units {
            for &i in &unit.items {
                dropped[i] = true;
                chunks += 1;
                tokens += self.items[i].part.alone();
            }
        }
        let marker = (with_marker && chunks > 0).then(|| {
            let text = format!("<{ELIDED_TAG} chunks=\"{chunks}\" tokens=\"{tokens}\"/>");
            CountedText::new(text, self.counter)
        });
        let elision = (chunks > 0).then_some(Elision {
            chunks,
            tokens,
            marker: marker.is_some(),
        });

        let mut messages: Vec<(Role, SmallVec<[Slot; 4]>)> = Vec::new();
        let mut push = |role: Role, slot: Slot| match messages.last_mut() {
            Some((last, slots)) if *last == role => slots.push(slot),
            _ => messages.push((role, SmallVec::from_elem(slot, 1))),
        };
        let mut marker_placed = marker.is_none();
        for (i, item) in self.items.iter().enumerate() {
            if dropped[i] {
                if !marker_placed {
                    push(Role::User, Slot::Marker);
                    marker_placed = true;
                }
            } else {
                push(item.role, Slot::Item(i));
            }
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
            dropped,
            marker,
            elision,
            total: 0,
        };
        layout.total = self.total(&layout);
        layout
    }

    /// Exact tokens of the prompt a layout describes.
    fn total(&self, layout: &Layout) -> usize {
        let mut total = 0;
        let mut any = false;
        if !self.system.is_empty() {
            let parts: SmallVec<[&CountedText; 8]> = self.system.iter().collect();
            total += self.message_tokens(Role::System, &parts);
            any = true;
        }
        for (role, slots) in &layout.messages {
            let parts: SmallVec<[&CountedText; 8]> =
                slots.iter().map(|slot| self.part(layout, *slot)).collect();
            total += self.message_tokens(*role, &parts);
            any = true;
        }
        if any { total + self.priming } else { 0 }
    }

    /// Tokens of one message: framing plus content.
    pub(crate) fn message_tokens(&self, role: Role, parts: &[&CountedText]) -> usize {
        self.framing[role_index(role)] + joined_tokens(parts, self.counter)
    }

    /// The counted text a slot stands for.
    pub(crate) fn part<'l>(&'l self, layout: &'l Layout, slot: Slot) -> &'l CountedText {
        match slot {
            Slot::Item(i) => &self.items[i].part,
            // A marker slot is only laid out together with its marker.
            Slot::Marker => layout.marker.as_ref().unwrap_or(&self.history_start),
            Slot::HistoryStart => &self.history_start,
        }
    }
}
