//! A session's turn whose grown prompt no longer fits, when the cuts the
//! plan adds are a few steps of its ladder past the last cut: they are
//! found from those steps alone and made in place (`trim_write`).
//!
//! The plan of such a turn (`replan`) repeats the last cut, then stubs
//! disposable bodies oldest first, then drops units, lowest priority
//! first, then oldest, until the prompt is within the trim target. Its
//! search probes step counts from the last cut outward
//! ([`fewest_steps_within`]), and a probe's total follows from the steps
//! before it, without the plan:
//!
//! - messages group the history's parts by role, and every part starts
//!   cleanly, so the prompt costs each part (followed by another of its
//!   message or not) plus each message's framing;
//! - a stub changes one part's cost, and leaves every message where it
//!   was;
//! - a dropped part changes only its neighbours' costs and messages (two
//!   messages of one role around it join), and the marker's count; the
//!   marker stands at the first dropped chunk, so a drop before it moves
//!   it there (out of its place, into the new one, each a local change);
//! - the target is the low-water mark whenever the protected items alone,
//!   with the marker of all the rest, would sit below the mark at the mark
//!   ([`trim_target`] is non-decreasing in the fully trimmed total, and the
//!   mark at 0): their sum bounds that total.
//!
//! So the turn reads the window's rows only where they changed since the
//! last trim (`trim_window`) and renders and counts only the parts its
//! probes reach. Whatever it does
//! not follow sends the turn to the plan, which gives the same answer the
//! long way: a compaction in effect, a target the bound does not settle, a
//! part that does not start cleanly (only custom or native renderers write
//! one, and then every part is checked), a drop of the history's first or
//! last part, a unit that is not what its call says or whose call is in
//! the system message. Should the writing of the
//! cuts not follow the prompt (it always has in the tests), the turn is
//! planned again from the last build, kept for that.

use std::sync::Arc;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::Build;
use super::clear::Clearing;
use super::extend::Appended;
use crate::budget::planner::role_index;
use crate::budget::{
    ChunkDecision, Elision, Timeline, elided_marker, fewest_steps_within, tool_call, trim_target,
};
use crate::model::chunk_id::fingerprint;
use crate::model::roles::{ChunkKind, Role};
use crate::output::last_build::LastBuild;
use crate::tokens::parts::{CountedText, SEPARATOR};

use super::trim_window::{Cuts, Shows, Turn, Window, most_a_part_costs};
use super::trim_write::{first_ordinals, locate};

/// The turn's cuts, and the prompt they leave.
pub(super) struct Trim {
    pub(super) window: Window,
    /// The turn's new chunks in the prompt (see [`Turn`]).
    pub(super) new: Vec<usize>,
    /// The stubs the turn's edit puts in, by chunk.
    pub(super) cleared: FxHashMap<usize, Arc<CountedText>>,
    /// New stubs: the place, its body and its stub.
    pub(super) stubs: Vec<(usize, Arc<CountedText>, Arc<CountedText>)>,
    /// The same, by place.
    pub(super) stubbed: FxHashMap<usize, Arc<CountedText>>,
    /// Places dropped, in order, and whether each place is.
    pub(super) drops: Vec<usize>,
    pub(super) dropped: Vec<bool>,
    /// The last prompt's message that shows the marker, when drops change it.
    pub(super) marker_message: Option<usize>,
    /// The marker's place once trimmed: the first dropped chunk's.
    pub(super) marker_at: Option<usize>,
    /// The places of the unit dropped there, when it is new.
    pub(super) marker_unit: Vec<usize>,
    /// What the prompt elides then, and its marker.
    pub(super) elided: Option<(Elision, CountedText)>,
    pub(super) total: usize,
    pub(super) target: usize,
}

impl Trim {
    /// The trim's window with its cuts, to keep for the next trim (see
    /// `trim_window`).
    pub(super) fn into_kept(self) -> (Window, Cuts) {
        let stubbed = self.stubs.iter().map(|(place, ..)| *place).collect();
        let cuts = Cuts {
            stubbed,
            dropped: self.drops,
        };
        (self.window, cuts)
    }

    /// The places of the chunks the history showed before the trim, in
    /// order.
    pub(super) fn shown_places(&self) -> Vec<usize> {
        let places = self.window.places.iter().enumerate();
        let shown = places.filter(|(_, p)| p.shows != Shows::Nothing);
        shown.map(|(place, _)| place).collect()
    }

    /// Whether the next plan starts from the chunk at `place`: the prompt
    /// shows it, or it is of the unit the marker stands for.
    pub(super) fn still_planned(&self, place: usize) -> bool {
        let moved = self.marker_at != self.window.marker;
        match (self.dropped[place], self.window.places[place].shows) {
            (true, _) => self.marker_unit.contains(&place),
            (false, Shows::Nothing) => !moved,
            (false, _) => true,
        }
    }

    /// Whether the prompt shows the chunk at `place` once trimmed.
    pub(super) fn shows_after(&self, place: usize) -> bool {
        self.window.places[place].shows != Shows::Nothing && !self.dropped[place]
    }

    /// Where the window's parts come from once trimmed, the turn having
    /// appended `appended`.
    pub(super) fn sources<'s>(&'s self, appended: &'s [Appended<'s>]) -> Sources<'s> {
        Sources {
            appended,
            new: &self.new,
            cleared: &self.cleared,
            stubbed: &self.stubbed,
            marker: None,
        }
    }
}

/// Where the parts of the window come from besides the cache: the
/// turn's new chunks, its edit's stubs, the trim's own, and the marker.
pub(super) struct Sources<'s> {
    pub(super) appended: &'s [Appended<'s>],
    pub(super) new: &'s [usize],
    pub(super) cleared: &'s FxHashMap<usize, Arc<CountedText>>,
    pub(super) stubbed: &'s FxHashMap<usize, Arc<CountedText>>,
    /// The marker, and its place (the first dropped chunk's).
    pub(super) marker: Option<(&'s Arc<CountedText>, usize)>,
}

impl<'t> Turn<'t> {
    /// The turn's sources as `walk` left them.
    fn sources<'s>(&'s self, walk: &'s Walk) -> Sources<'s>
    where
        't: 's,
    {
        Sources {
            appended: self.appended,
            new: &self.new,
            cleared: &self.cleared,
            stubbed: &walk.stubbed,
            marker: walk.marker.map(|place| (&self.marker, place)),
        }
    }
}

/// The search's walk along the ladder past the last cut: the stubs and
/// drops it has taken, and what each saves.
struct Walk {
    stubs: Vec<(usize, Arc<CountedText>, Arc<CountedText>)>,
    /// Tokens saved by the first `k` stubs, at `k`.
    saved: Vec<usize>,
    /// Next of `Window::stubbable` to look at.
    next_stub: usize,
    stubs_done: bool,
    /// Per place: stubbed by the walk, dropped by it.
    stubbed: FxHashMap<usize, Arc<CountedText>>,
    removed: Vec<bool>,
    /// Where the marker stands: at the first chunk dropped.
    marker: Option<usize>,
    /// Per drop, the unit it belongs to (the units' order).
    units_of_drops: Vec<usize>,
    /// Per place, the role and costs of what the last prompt shows there,
    /// once asked (the walk's stubs and the marker aside).
    costs: Vec<Option<Costs>>,
    /// Next unit to drop: its priority class and its rank there.
    next_unit: (usize, usize),
    drops: Vec<usize>,
    /// After each number of units dropped, from none.
    after: Vec<Dropped>,
}

impl Walk {
    /// Where the marker stands once the walk's drops are in: at the first
    /// dropped chunk (else where it stood), and the places of the unit
    /// dropped there, which the next plan starts from.
    fn marker_after(&self, window: &Window) -> (Option<usize>, Vec<usize>) {
        let at = match (self.drops.iter().copied().min(), window.marker) {
            (Some(dropped), Some(marker)) => Some(dropped.min(marker)),
            (dropped, marker) => dropped.or(marker),
        };
        let drops = || self.drops.iter().zip(&self.units_of_drops);
        let unit = drops()
            .find(|(place, _)| Some(**place) == at)
            .map(|(_, u)| *u);
        let places = drops().filter(|(_, u)| Some(**u) == unit);
        (at, places.map(|(place, _)| *place).collect())
    }
}

/// The places of one unit: a chunk alone, or a call and its results.
type Members = SmallVec<[usize; 4]>;

/// A part's role and its tokens in its message, alone at its end or
/// followed by another part.
#[derive(Debug, Clone, Copy)]
struct Costs {
    role: Role,
    alone: u32,
    joined: u32,
}

impl Costs {
    /// `None` for a part of more than `u32::MAX` tokens: the trim then
    /// leaves the turn to the plan.
    fn of(role: Role, part: &CountedText) -> Option<Self> {
        Some(Costs {
            role,
            alone: part.alone().try_into().ok()?,
            joined: part.joined().try_into().ok()?,
        })
    }

    fn in_message(self, followed: bool) -> usize {
        (if followed { self.joined } else { self.alone }) as usize
    }
}

/// Where the walk stands after dropping some units.
#[derive(Debug, Clone, Copy, Default)]
struct Dropped {
    /// What the drops changed the prompt's tokens by, the marker's count
    /// aside.
    changed: isize,
    /// The chunks and tokens they left out.
    counts: (usize, usize),
    /// Whether the marker's message goes on after it.
    followed: bool,
    /// How many places they took out.
    places: usize,
}

impl<'a> Build<'a> {
    /// This turn's cuts, when the plan's are a few steps of its ladder
    /// past `turn`'s last cut; the prompt grown by the turn (and its edit)
    /// costs `grown` tokens. `None` when the plan must run.
    pub(super) fn trim_in_place(
        &mut self,
        turn: Turn<'_>,
        (timeline, lifted): (&Timeline, &[(usize, ChunkDecision)]),
        grown: usize,
    ) -> Option<Trim> {
        if turn.carry.result.compaction.is_some() {
            return None;
        }
        // A call in the system message leaves a unit of results alone.
        let chunks = &self.state.chunks;
        let system = &turn.carry.system_chunks;
        if system
            .iter()
            .any(|&i| chunks[i].kind == ChunkKind::Workflow)
        {
            return None;
        }
        let window = self.window_of(&turn, timeline, lifted)?;
        let target = self.settled_target(&turn, &window)?;
        let mut walk = Walk {
            stubs: Vec::new(),
            saved: vec![0],
            next_stub: 0,
            stubs_done: false,
            stubbed: FxHashMap::default(),
            removed: vec![false; window.places.len()],
            marker: window.marker,
            units_of_drops: Vec::new(),
            costs: vec![None; window.places.len()],
            next_unit: (0, 0),
            drops: Vec::new(),
            after: vec![Dropped::default()],
        };
        let total_at = |steps: usize| self.total_after(&turn, &window, &mut walk, (steps, grown));
        let steps = fewest_steps_within((1, usize::MAX, usize::MAX), target, total_at)?;
        let total = self.total_after(&turn, &window, &mut walk, (steps, grown))?;
        let stubs = walk.stubs.len().min(steps);
        walk.stubs.truncate(stubs);
        let dropped = walk.after[steps - stubs];
        walk.drops.truncate(dropped.places);
        let marker_message = match walk.drops.is_empty() || window.marker.is_none() {
            true => None,
            false => Some(self.marker_message(&turn, &window)?),
        };
        let (marker_at, marker_unit) = walk.marker_after(&window);
        let mut mask = vec![false; window.places.len()];
        walk.drops.iter().for_each(|&p| mask[p] = true);
        let stubbed = (walk.stubs.iter())
            .map(|(place, _, stub)| (*place, Arc::clone(stub)))
            .collect();
        let elided = (!walk.drops.is_empty()).then(|| {
            let (chunks, tokens) = elided_counts(turn.carry);
            let counts = (chunks + dropped.counts.0, tokens + dropped.counts.1);
            let elision = Elision {
                chunks: counts.0,
                tokens: counts.1,
                marker: true,
                summary: false,
            };
            (elision, self.marker_of(counts))
        });
        Some(Trim {
            window,
            new: turn.new,
            cleared: turn.cleared,
            stubs: walk.stubs,
            stubbed,
            drops: walk.drops,
            dropped: mask,
            marker_message,
            marker_at,
            marker_unit,
            elided,
            total,
            target,
        })
    }

    /// The turn as the trim reads it, its edit's stubs given.
    pub(super) fn trim_turn_of<'t>(
        &self,
        carry: &'t LastBuild,
        appended: &'t [Appended<'t>],
        clearing: Option<&Clearing>,
    ) -> Turn<'t> {
        let new = (appended.iter().enumerate())
            .filter(|(_, a)| a.part.is_some())
            .map(|(i, _)| i)
            .collect();
        let cleared = clearing.map(Clearing::stubs).unwrap_or_default();
        let marker = Arc::new(self.marker_of(elided_counts(carry)));
        Turn {
            carry,
            appended,
            new,
            cleared,
            marker,
        }
    }

    /// The elided-history marker for `chunks` chunks of `tokens` tokens.
    fn marker_of(&self, counts: (usize, usize)) -> CountedText {
        let protocol = self.settings.renderers.protocol();
        elided_marker(protocol, self.preparer.counter, counts)
    }

    /// The plan's trim target when the bound of the fully trimmed prompt
    /// settles it at the low-water mark; `None` otherwise.
    fn settled_target(&self, turn: &Turn<'_>, window: &Window) -> Option<usize> {
        let settings = self.settings;
        let elided = elided_counts(turn.carry);
        let (chunks, tokens) = window.droppable;
        let marker = self.marker_of((elided.0 + chunks, elided.1 + tokens));
        let system = turn.carry.result.system_message().map_or(0, |m| m.tokens);
        // A history-start message, should the fully trimmed history not
        // open with the user's.
        let start = match settings.user_first {
            true => most_a_part_costs(window.framing, &self.history_start()),
            false => 0,
        };
        let bound = system
            + settings.framing.priming()
            + window.protected_cost
            + most_a_part_costs(window.framing, &marker)
            + start;
        let (available, low_water) = (self.budget.available, self.preparer.policy.low_water);
        let target = trim_target(available, low_water, bound);
        (bound <= available && target == trim_target(available, low_water, 0)).then_some(target)
    }

    /// The last prompt's message that shows the marker: with the part
    /// before it, with the part after it, or alone.
    fn marker_message(&self, turn: &Turn<'_>, window: &Window) -> Option<usize> {
        let carry = turn.carry;
        let (marker, text) = (window.marker?, &turn.marker.text);
        let firsts = first_ordinals(carry);
        let places = &window.places[..marker];
        let before = places.iter().filter(|p| p.shows != Shows::Nothing).count();
        let messages = &carry.result.messages;
        let previous = before.checked_sub(1).and_then(|o| locate(&firsts, o));
        if let Some((m, k)) = previous {
            let message = &messages[m];
            let rest = &message.content[message.spans[k].end..];
            let rest = rest
                .strip_prefix(SEPARATOR)
                .and_then(|r| r.strip_prefix(text.as_str()));
            if rest.is_some_and(|r| r.is_empty() || r.starts_with(SEPARATOR)) {
                return Some(m);
            }
        }
        if let Some((m, k)) = locate(&firsts, before) {
            let message = &messages[m];
            let head = &message.content[..message.spans[k].start];
            let head = head
                .strip_suffix(SEPARATOR)
                .and_then(|h| h.strip_suffix(text.as_str()));
            if head.is_some_and(|h| h.is_empty() || h.ends_with(SEPARATOR)) {
                return Some(m);
            }
        }
        let m = match previous {
            Some((m, _)) => m + 1,
            None => self.first_trimmable(carry),
        };
        let message = messages.get(m)?;
        (message.chunk_ids.is_empty() && message.content[..] == *text.as_str()).then_some(m)
    }

    /// The first message of `carry`'s history that a trim may write again:
    /// after the system message and any history-start message.
    pub(super) fn first_trimmable(&self, carry: &LastBuild) -> usize {
        let first = usize::from(carry.result.system_message().is_some());
        let opens = (carry.result.messages.get(first)).is_some_and(|m| {
            self.settings.user_first
                && m.chunk_ids.is_empty()
                && m.content[..] == *self.history_start().text.as_str()
        });
        first + usize::from(opens)
    }

    /// The total after `steps` steps past the last cut, the grown prompt
    /// costing `grown`: walking on as far as they reach.
    fn total_after(
        &mut self,
        turn: &Turn<'_>,
        window: &Window,
        walk: &mut Walk,
        (steps, grown): (usize, usize),
    ) -> Option<usize> {
        while walk.saved.len() <= steps && !walk.stubs_done {
            self.stub_on(turn, window, walk)?;
        }
        if steps < walk.saved.len() {
            return grown.checked_sub(walk.saved[steps]);
        }
        let units = steps - (walk.saved.len() - 1);
        while walk.after.len() <= units {
            self.drop_on(turn, window, walk)?;
        }
        let dropped = walk.after[units];
        let elided = elided_counts(turn.carry);
        let counts = dropped.counts;
        let marker = self.marker_of((elided.0 + counts.0, elided.1 + counts.1));
        let old = &turn.marker;
        let cost = |text: &CountedText| text.in_message(dropped.followed) as isize;
        let stubbed = grown as isize - *walk.saved.last()? as isize;
        usize::try_from(stubbed + dropped.changed + cost(&marker) - cost(old)).ok()
    }

    /// Takes the next stub step into `walk`, or notes there is none.
    fn stub_on(&mut self, turn: &Turn<'_>, window: &Window, walk: &mut Walk) -> Option<()> {
        let chunks = &self.state.chunks;
        let Some(&place) = window.stubbable.get(walk.next_stub) else {
            walk.stubs_done = true;
            return Some(());
        };
        walk.next_stub += 1;
        let index = window.places[place].chunk;
        let chunk = &chunks[index];
        let (role, part) = self.shown(&turn.sources(walk), window, place)?;
        let Some(mut stub) = self.stub(index, chunk, &part) else {
            return Some(());
        };
        if !stub.clean_start {
            return None;
        }
        if stub.is_released() {
            self.cache.forget_stub(index);
            stub = self.stub(index, chunk, &part)?;
        }
        let next = next_present(window, walk, place);
        let followed = match next {
            Some(next) => self.costs_at(turn, window, walk, next)?.role == role,
            None => false,
        };
        let saved = (part.in_message(followed)).checked_sub(stub.in_message(followed))?;
        walk.saved.push(walk.saved.last()? + saved);
        walk.stubbed.insert(place, Arc::clone(&stub));
        walk.stubs.push((place, part, stub));
        Some(())
    }

    /// Takes the next drop step into `walk`: the next unit, every member
    /// taken out of its message, the marker moved to the first dropped.
    fn drop_on(&mut self, turn: &Turn<'_>, window: &Window, walk: &mut Walk) -> Option<()> {
        let (class, rank) = walk.next_unit;
        let (_, heads) = window.heads.get(class)?;
        let Some(&head) = heads.get(rank) else {
            walk.next_unit = (class + 1, 0);
            return Some(());
        };
        walk.next_unit = (class, rank + 1);
        let members = self.members(turn, window, head)?;
        let mut dropped = *walk.after.last()?;
        for place in members {
            // A member the prompt no longer shows (dropped before, or by
            // this walk) sends the turn to the plan.
            let member = &window.places[place];
            if member.protected || member.shows == Shows::Nothing || walk.removed[place] {
                return None;
            }
            dropped.changed += self.drop_change(turn, window, walk, place)?;
            walk.removed[place] = true;
            walk.drops.push(place);
            walk.units_of_drops.push(walk.after.len());
            let tokens = window.places[place].body_tokens();
            dropped.counts = (dropped.counts.0 + 1, dropped.counts.1 + tokens);
            if walk.marker.is_none_or(|marker| place < marker) {
                dropped.changed += self.move_marker(turn, window, walk, place)?;
            }
        }
        dropped.places = walk.drops.len();
        dropped.followed = match next_present(window, walk, walk.marker?) {
            Some(next) => self.costs_at(turn, window, walk, next)?.role == Role::User,
            None => false,
        };
        walk.after.push(dropped);
        Some(())
    }

    /// What moving the marker to `place` (a chunk just dropped) changes
    /// the prompt's tokens by: it leaves its place, if it had one, and
    /// comes in at `place`.
    fn move_marker(
        &mut self,
        turn: &Turn<'_>,
        window: &Window,
        walk: &mut Walk,
        place: usize,
    ) -> Option<isize> {
        let mut changed = 0;
        if let Some(old) = walk.marker {
            changed += self.drop_change(turn, window, walk, old)?;
        }
        walk.marker = Some(place);
        // Coming in costs what going out would save.
        Some(changed - self.drop_change(turn, window, walk, place)?)
    }

    /// What taking the part at `place` out of the prompt changes its
    /// tokens by: its own cost and its message's framing go, the part
    /// before it may end its message now, and two messages of one role
    /// around it join.
    fn drop_change(
        &mut self,
        turn: &Turn<'_>,
        window: &Window,
        walk: &mut Walk,
        place: usize,
    ) -> Option<isize> {
        let before = previous_present(window, walk, place)?;
        let after = next_present(window, walk, place)?;
        let part = self.costs_at(turn, window, walk, place)?;
        let before_part = self.costs_at(turn, window, walk, before)?;
        let after_role = self.costs_at(turn, window, walk, after)?.role;
        let (role, before_role) = (part.role, before_part.role);
        let frame = |role: Role| window.framing[role_index(role)] as isize;
        let cost = |costs: Costs, followed: bool| costs.in_message(followed) as isize;
        let starts = |role: Role, after: Role| if role == after { 0 } else { frame(role) };
        let old = cost(before_part, before_role == role)
            + cost(part, role == after_role)
            + starts(role, before_role)
            + starts(after_role, role);
        let new = cost(before_part, before_role == after_role) + starts(after_role, before_role);
        Some(new - old)
    }

    /// The role and costs of the part at `place` as `walk` left the
    /// prompt: its stub or the marker if the walk put one there, else what
    /// the last prompt shows, worked out once a walk.
    fn costs_at(
        &mut self,
        turn: &Turn<'_>,
        window: &Window,
        walk: &mut Walk,
        place: usize,
    ) -> Option<Costs> {
        if walk.marker == Some(place) {
            return Costs::of(Role::User, &turn.marker);
        }
        let shown = match walk.costs.get(place).copied().flatten() {
            Some(shown) => shown,
            None => {
                let stubbed = FxHashMap::default();
                let sources = Sources {
                    stubbed: &stubbed,
                    marker: None,
                    ..turn.sources(walk)
                };
                let (role, part) = self.shown(&sources, window, place)?;
                let shown = Costs::of(role, &part)?;
                *walk.costs.get_mut(place)? = Some(shown);
                shown
            }
        };
        match walk.stubbed.get(&place) {
            Some(stub) => Costs::of(shown.role, stub),
            None => Some(shown),
        }
    }

    /// The places of the unit whose first member is at `head`.
    fn members(&self, turn: &Turn<'_>, window: &Window, head: usize) -> Option<Members> {
        let chunks = &self.state.chunks;
        let first = window.places[head].chunk;
        let Some(call) = tool_call(&chunks[first]) else {
            return Some(Members::from_elem(head, 1));
        };
        // An old unit spans its call id's chunks; a new one is the turn's.
        let (from, end, last) = match head < window.old {
            true => {
                let &(since, last) = turn.carry.calls.get(&fingerprint(call))?;
                (head, window.old, (since == first).then_some(last)?)
            }
            false => (window.old, window.places.len(), usize::MAX),
        };
        let members: Members = (from..end)
            .take_while(|&p| window.places[p].chunk <= last)
            .filter(|&p| tool_call(&chunks[window.places[p].chunk]) == Some(call))
            .collect();
        // A unit whose result comes before its call drops from the result.
        (members.first() == Some(&head)).then_some(members)
    }

    /// The role and the text (body or stub) the part at `place` shows
    /// with the stubs of `sources`.
    pub(super) fn shown(
        &mut self,
        sources: &Sources<'_>,
        window: &Window,
        place: usize,
    ) -> Option<(Role, Arc<CountedText>)> {
        if let Some((marker, at)) = sources.marker
            && at == place
        {
            return Some((Role::User, Arc::clone(marker)));
        }
        let index = window.places[place].chunk;
        if let Some(new) = place.checked_sub(window.old) {
            let (role, part) = sources.appended[*sources.new.get(new)?].part.as_ref()?;
            let shown = sources.stubbed.get(&place).unwrap_or(part);
            return Some((*role, Arc::clone(shown)));
        }
        let chunk = &self.state.chunks[index];
        let prepared = self.prepared(index, chunk).ok()?;
        let shown = match (sources.stubbed.get(&place), window.places[place].shows) {
            (Some(stub), _) => Arc::clone(stub),
            (None, Shows::Body) => prepared.part,
            (None, Shows::Stub) => self.stub_shown(sources.cleared, index, &prepared.part)?,
            (None, Shows::Nothing) => return None,
        };
        Some((prepared.role, shown))
    }
}

/// The chunks and tokens `carry`'s prompt elides (none without a marker).
fn elided_counts(carry: &LastBuild) -> (usize, usize) {
    (carry.result.elided).map_or((0, 0), |e| (e.chunks, e.tokens))
}

/// The nearest place before `place` that the prompt shows, the walk's
/// drops taken out (the marker's included).
fn previous_present(window: &Window, walk: &Walk, place: usize) -> Option<usize> {
    (0..place).rev().find(|&p| is_present(window, walk, p))
}

/// The nearest place after `place` that the prompt shows.
fn next_present(window: &Window, walk: &Walk, place: usize) -> Option<usize> {
    (place + 1..window.places.len()).find(|&p| is_present(window, walk, p))
}

fn is_present(window: &Window, walk: &Walk, place: usize) -> bool {
    Some(place) == walk.marker
        || (window.places[place].shows != Shows::Nothing && !walk.removed[place])
}
