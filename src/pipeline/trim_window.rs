//! The window a trim reads ([`Window`]): each chunk the last prompt
//! planned, then the turn's new ones in the prompt, with what each shows
//! and how the ladder may cut it.
//!
//! A session's first trim reads it whole. The window it leaves is kept
//! ([`KeptWindow`]), and the next trim judges again only what changed
//! since: the rows later turns wrote (protection lifted, an edit's stubs,
//! noted in `LastBuild::changed_rows`), the chunks young enough then to
//! come of age since, and the chunks planned since. Its sums (what the
//! protected items cost, what the trim may drop, the stub and drop steps)
//! are taken again from the judged places, a few instructions each. Where
//! the kept window does not line up with the last build's planned chunks,
//! or anything else ran in between (a plan, a build that was not a turn),
//! the window is read whole again; debug builds hold the two equal.

use rustc_hash::FxHashMap;
use std::sync::Arc;

use super::Build;
use super::trim::{Trim, Turn, body_tokens, most_a_part_costs};
use crate::budget::{ChunkDecision, Decision, Timeline, framing_table};
use crate::model::roles::{ChunkKind, Retention::Disposable};
use crate::output::last_build::LastBuild;
use crate::render::Protocol;
use crate::tokens::parts::CountedText;

/// What a place of the window shows in the last prompt, grown by the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shows {
    Body,
    Stub,
    Nothing,
}

/// One chunk of the window: the last prompt's planned chunks, then the
/// turn's new ones in the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Place {
    pub(super) chunk: usize,
    pub(super) shows: Shows,
    pub(super) protected: bool,
    judged: Judged,
}

/// How the ladder may cut a place the prompt shows (nothing for one it
/// does not).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Judged {
    /// Tokens it costs at most in the prompt, framing included, when
    /// protected.
    protected_cost: usize,
    /// Tokens of its body: what dropping it elides.
    tokens: usize,
    priority: i64,
    /// Whether a stub step may stub it: an unprotected disposable body.
    stubbable: bool,
    /// Whether a drop step starts at it: its unit's first member.
    head: bool,
}

/// What the trim reads of the window.
pub(super) struct Window {
    pub(super) places: Vec<Place>,
    /// Places below are the last build's chunks.
    pub(super) old: usize,
    /// The marker's place: the first chunk the last build dropped, if it
    /// dropped any.
    pub(super) marker: Option<usize>,
    /// Unprotected disposable bodies, oldest first: the stub steps.
    pub(super) stubbable: Vec<usize>,
    /// The first place of each droppable unit, by priority (ascending),
    /// each in order: the drop steps.
    pub(super) heads: Vec<(i64, Vec<usize>)>,
    /// Tokens the protected items cost at most, framing included.
    pub(super) protected_cost: usize,
    /// Chunks and tokens the fully trimmed prompt drops besides those
    /// already elided.
    pub(super) droppable: (usize, usize),
    /// Framing tokens of a message of each role, by `role_index`.
    pub(super) framing: [usize; 3],
}

/// The window a trim left, as the last build's planned chunks stand after
/// it, for the next trim to start from (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct KeptWindow {
    places: Vec<Place>,
    /// The first chunk fewer steps old than a result needs to be
    /// disposable, then: the chunks from it on may have come of age.
    young_from: usize,
}

impl Window {
    /// Takes the sums, the marker and the steps from the judged places.
    fn sum_up(&mut self) {
        let (mut stubbable, mut heads) = (Vec::new(), Vec::<(i64, Vec<usize>)>::new());
        let (mut protected_cost, mut droppable, mut marker) = (0, (0, 0), None);
        for (place, p) in self.places.iter().enumerate() {
            let judged = p.judged;
            match (p.shows, p.protected) {
                (Shows::Nothing, _) => {
                    marker = marker.or(Some(place));
                    continue;
                }
                (_, true) => {
                    protected_cost += judged.protected_cost;
                    continue;
                }
                _ => droppable = (droppable.0 + 1, droppable.1 + judged.tokens),
            }
            if judged.stubbable {
                stubbable.push(place);
            }
            if judged.head {
                // Neighbours are mostly of one class: look there first.
                let class = match heads.last() {
                    Some((p, _)) if *p == judged.priority => Some(heads.len() - 1),
                    _ => heads.iter().position(|(p, _)| *p == judged.priority),
                };
                match class {
                    Some(class) => heads[class].1.push(place),
                    None => heads.push((judged.priority, vec![place])),
                }
            }
        }
        heads.sort_by_key(|(p, _)| *p);
        (self.stubbable, self.heads) = (stubbable, heads);
        (self.protected_cost, self.droppable, self.marker) = (protected_cost, droppable, marker);
    }
}

impl Build<'_> {
    /// The turn's window: the kept one brought up to date, or read whole;
    /// `None` for one the trim does not follow.
    pub(super) fn window_of(
        &mut self,
        turn: &Turn<'_>,
        timeline: &Timeline,
        lifted: &[(usize, ChunkDecision)],
    ) -> Option<Window> {
        let kept = self.cache.take_window();
        let carry = turn.carry;
        let places = match (kept, &carry.changed_rows) {
            (Some(kept), Some(changed)) => self.brought_up(kept, (turn, changed), timeline, lifted),
            _ => None,
        };
        let places = match places {
            Some(places) => {
                debug_assert_eq!(
                    places,
                    self.read_places(turn, timeline, lifted)?,
                    "a kept window brought up to date reads as the whole"
                );
                places
            }
            None => self.read_places(turn, timeline, lifted)?,
        };
        let mut window = Window {
            places,
            old: carry.planned.len(),
            marker: None,
            stubbable: Vec::new(),
            heads: Vec::new(),
            protected_cost: 0,
            droppable: (0, 0),
            framing: framing_table(self.settings.framing, self.preparer.counter),
        };
        window.sum_up();
        // The marker stands where the first dropped chunk was.
        let marked = carry.result.elided.is_some();
        (window.marker.is_some() == marked).then_some(window)
    }

    /// Reads every place of the window.
    fn read_places(
        &mut self,
        turn: &Turn<'_>,
        timeline: &Timeline,
        lifted: &[(usize, ChunkDecision)],
    ) -> Option<Vec<Place>> {
        let carry = turn.carry;
        let mut places = Vec::with_capacity(carry.planned.len() + turn.new.len());
        let mut decisions = carry.result.decisions.iter();
        let mut ages = timeline.ages();
        // The rows whose protection lifts, met in order.
        let mut lifted: Vec<&(usize, ChunkDecision)> = lifted.iter().collect();
        lifted.sort_unstable_by_key(|(index, _)| *index);
        let mut lifted = lifted.into_iter().peekable();
        let mut at = 0;
        for &index in &carry.planned {
            let mut row = decisions.nth(index.checked_sub(at)?)?;
            at = index + 1;
            while let Some((passed, lifted)) = lifted.next_if(|(i, _)| *i <= index) {
                if *passed == index {
                    row = lifted;
                }
            }
            let shows = shows_of(turn, index, row);
            places.push(self.judge(turn, (index, row, shows), || ages.of(index))?);
        }
        for place in self.new_places(turn, timeline) {
            places.push(place?);
        }
        Some(places)
    }

    /// The places of the turn's new chunks in the prompt.
    fn new_places<'t>(
        &'t mut self,
        turn: &'t Turn<'_>,
        timeline: &'t Timeline,
    ) -> impl Iterator<Item = Option<Place>> + 't {
        turn.new.iter().map(move |&i| {
            let a = &turn.appended[i];
            let shows = match a.row.decision {
                Decision::Stubbed { .. } => Shows::Stub,
                _ => Shows::Body,
            };
            self.judge(turn, (a.index, &a.row, shows), || {
                timeline.steps_after(a.index)
            })
        })
    }

    /// `kept`'s places brought up to the turn: the places of rows written
    /// since (`changed`, and the turn's `lifted` and cleared) and of chunks
    /// young then judged again, those planned since and the turn's new
    /// ones added. `None` when `kept` is not the last build's.
    fn brought_up(
        &mut self,
        kept: KeptWindow,
        (turn, changed): (&Turn<'_>, &[usize]),
        timeline: &Timeline,
        lifted: &[(usize, ChunkDecision)],
    ) -> Option<Vec<Place>> {
        let carry = turn.carry;
        let mut places = kept.places;
        let planned = &carry.planned;
        let aligned = places.len() <= planned.len()
            && places
                .iter()
                .zip(planned)
                .all(|(p, &chunk)| p.chunk == chunk);
        if !aligned {
            return None;
        }
        let overrides: FxHashMap<usize, &ChunkDecision> =
            lifted.iter().map(|(index, row)| (*index, row)).collect();
        let row_of = |index: usize| match overrides.get(&index) {
            Some(row) => Some(*row),
            None => carry.result.decisions.get(index),
        };
        let young = places.partition_point(|p| p.chunk < kept.young_from);
        let written = (changed.iter().copied())
            .chain(overrides.keys().copied())
            .chain(turn.cleared.keys().copied());
        let mut again: Vec<usize> = written
            .filter_map(|chunk| places.binary_search_by_key(&chunk, |p| p.chunk).ok())
            .chain(young..places.len())
            .collect();
        again.sort_unstable();
        again.dedup();
        for place in again {
            let index = places[place].chunk;
            let row = row_of(index)?;
            let shows = shows_of(turn, index, row);
            places[place] =
                self.judge(turn, (index, row, shows), || timeline.steps_after(index))?;
        }
        for &index in &planned[places.len()..] {
            let row = row_of(index)?;
            let shows = shows_of(turn, index, row);
            places.push(self.judge(turn, (index, row, shows), || timeline.steps_after(index))?);
        }
        for place in self.new_places(turn, timeline) {
            places.push(place?);
        }
        Some(places)
    }

    /// The place of the chunk at `index`, judged as `row`, `age` steps
    /// old; `None` for one the trim does not follow.
    fn judge(
        &mut self,
        turn: &Turn<'_>,
        (index, row, shows): (usize, &ChunkDecision, Shows),
        age: impl FnOnce() -> usize,
    ) -> Option<Place> {
        let mut place = Place {
            chunk: index,
            shows,
            protected: row.protected,
            judged: Judged::default(),
        };
        if shows == Shows::Nothing {
            return Some(place);
        }
        // Totals add up part by part only where every part starts cleanly:
        // the default text renderers' do (each opens with its tag); custom
        // or native ones' parts are checked.
        let renderers = &self.settings.renderers;
        let checks_starts = !renderers.only_default() || renderers.protocol() != Protocol::Text;
        if checks_starts && !self.starts_clean(&turn.cleared, (index, shows))? {
            return None;
        }
        let chunk = &self.state.chunks[index];
        if row.protected {
            // The protected stay as they are: stubbed by no edit (it
            // clears no protected use).
            let prepared = self.prepared(index, chunk).ok()?;
            let framing = framing_table(self.settings.framing, self.preparer.counter);
            place.judged.protected_cost =
                (shows == Shows::Body).then(|| most_a_part_costs(framing, &prepared.part))?;
            return Some(place);
        }
        let judged = &mut place.judged;
        judged.tokens = body_tokens(row);
        judged.priority = row.priority;
        let policy = self.preparer.policy;
        judged.stubbable = shows == Shows::Body && policy.retention_of(chunk, age()) == Disposable;
        // A unit drops from its first member: its call, or the chunk alone
        // (anything but a result that answers a call; `members` sends a
        // unit whose result comes first to the plan).
        judged.head = row.kind != ChunkKind::Environment || chunk.call_id.is_none();
        Some(place)
    }

    /// Whether the part the chunk at `index` shows (its body or its stub)
    /// starts cleanly; `None` when it cannot be told.
    fn starts_clean(
        &mut self,
        cleared: &FxHashMap<usize, Arc<CountedText>>,
        (index, shows): (usize, Shows),
    ) -> Option<bool> {
        let part = self.prepared(index, &self.state.chunks[index]).ok()?.part;
        let shown = match shows {
            Shows::Stub => self.stub_shown(cleared, index, &part)?,
            _ => part,
        };
        Some(shown.clean_start)
    }

    /// Keeps `trim`'s window, as it left the last build's planned chunks,
    /// for the next trim; `timeline` is the turn's.
    pub(super) fn keep_window(&mut self, carry: &mut LastBuild, trim: Trim, timeline: &Timeline) {
        // Without drops every place stays planned.
        let stays: Vec<bool> = match trim.drops.is_empty() {
            true => Vec::new(),
            false => (0..trim.window.places.len())
                .map(|place| trim.still_planned(place))
                .collect(),
        };
        let mut places = trim.window.places;
        for (place, ..) in &trim.stubs {
            places[*place].shows = Shows::Stub;
            places[*place].judged.stubbable = false;
        }
        for &place in &trim.drops {
            places[place].shows = Shows::Nothing;
            places[place].judged = Judged::default();
        }
        if !stays.is_empty() {
            let mut place = 0;
            places.retain(|_| {
                place += 1;
                stays[place - 1]
            });
        }
        let recent = self.preparer.policy.recent_turns;
        let starts = timeline.step_starts();
        // With no step young, none comes of age.
        let young_from = (starts.len().checked_sub(recent))
            .map_or(0, |s| starts.get(s).copied().unwrap_or(usize::MAX));
        if places.len() == carry.planned.len() {
            self.cache.keep_window(KeptWindow { places, young_from });
            carry.changed_rows = Some(Vec::new());
        }
    }
}

/// What the chunk at `index`, judged as `row`, shows in the last prompt
/// grown by `turn` (and its edit).
fn shows_of(turn: &Turn<'_>, index: usize, row: &ChunkDecision) -> Shows {
    match row.decision {
        Decision::Dropped { .. } => Shows::Nothing,
        Decision::Stubbed { .. } => Shows::Stub,
        _ if turn.cleared.contains_key(&index) => Shows::Stub,
        Decision::Kept | Decision::Truncated { .. } => Shows::Body,
    }
}
