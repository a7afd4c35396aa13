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
//! are taken again from the judged places, a few instructions each. The
//! window is read whole again when no trim kept one for this build: after
//! a plan or a full-pipeline build, after more noted rows than the prompt
//! plans, or when the kept places do not line up with the last build's
//! planned chunks. Debug builds check every kept window against a whole
//! read.
//!
//! The window lives in the session's `BuildCache`, beside the renderings,
//! rather than in `LastBuild`, which a trim copies whole as its fallback.

use rustc_hash::FxHashMap;
use std::sync::Arc;

use super::Build;
use super::extend::Appended;
use crate::budget::{Ages, ChunkDecision, Decision, Timeline, framing_table};
use crate::model::roles::{ChunkKind, Retention::Disposable};
use crate::output::last_build::LastBuild;
use crate::render::Protocol;
use crate::tokens::parts::CountedText;

/// The turn as a trim reads it.
pub(super) struct Turn<'t> {
    pub(super) carry: &'t LastBuild,
    pub(super) appended: &'t [Appended<'t>],
    /// The appended chunks in the prompt, by place past the old ones.
    pub(super) new: Vec<usize>,
    /// The stubs the turn's edit puts in, by chunk.
    pub(super) cleared: FxHashMap<usize, Arc<CountedText>>,
    /// The marker as the last prompt shows it (or, if it shows none, one
    /// of no chunks): the walk counts it so, and counts it again once.
    pub(super) marker: Arc<CountedText>,
}

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

impl Place {
    /// Tokens of its body, what dropping it elides: judged for a place the
    /// ladder may drop, 0 for one protected or showing nothing.
    pub(super) fn body_tokens(&self) -> usize {
        self.judged.tokens
    }
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

/// What judging a place needs of the settings, worked out once a window.
#[derive(Clone, Copy)]
struct Reading {
    /// Framing tokens of a message of each role, by `role_index`.
    framing: [usize; 3],
    /// Whether parts may not start cleanly (custom or native renderers),
    /// so that each is checked: totals add up part by part only where
    /// every part starts cleanly, as the default text renderers' do.
    checks_starts: bool,
}

/// The cuts a trim made, as its window places them: the places it stubbed
/// and those it dropped.
pub(super) struct Cuts {
    pub(super) stubbed: Vec<usize>,
    pub(super) dropped: Vec<usize>,
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
        let renderers = &self.settings.renderers;
        let reading = Reading {
            framing: framing_table(self.settings.framing, self.preparer.counter),
            checks_starts: !renderers.only_default() || renderers.protocol() != Protocol::Text,
        };
        let kept = self.cache.take_window();
        let carry = turn.carry;
        let brought_up = match (kept, &carry.changed_rows) {
            (Some(kept), Some(changed)) => {
                self.brought_up(kept, (turn, changed), (timeline, reading), lifted)
            }
            _ => None,
        };
        let places = match brought_up {
            Some(places) => {
                debug_assert_eq!(
                    Some(&places),
                    self.read_places(turn, (timeline, reading), lifted).as_ref(),
                    "a kept window brought up to date reads as the whole"
                );
                places
            }
            None => self.read_places(turn, (timeline, reading), lifted)?,
        };
        let mut window = Window {
            places,
            old: carry.planned.len(),
            marker: None,
            stubbable: Vec::new(),
            heads: Vec::new(),
            protected_cost: 0,
            droppable: (0, 0),
            framing: reading.framing,
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
        (timeline, reading): (&Timeline, Reading),
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
            let judged = self.judge((turn, reading), (index, row, shows), || ages.of(index));
            places.push(judged?);
        }
        for place in self.new_places((turn, reading), ages) {
            places.push(place?);
        }
        Some(places)
    }

    /// The places of the turn's new chunks in the prompt, whose ages
    /// `ages` reads on.
    fn new_places<'t>(
        &'t mut self,
        (turn, reading): (&'t Turn<'_>, Reading),
        mut ages: Ages<'t>,
    ) -> impl Iterator<Item = Option<Place>> + 't {
        turn.new.iter().map(move |&i| {
            let a = &turn.appended[i];
            let shows = match a.row.decision {
                Decision::Stubbed { .. } => Shows::Stub,
                _ => Shows::Body,
            };
            let age = || ages.of(a.index);
            self.judge((turn, reading), (a.index, &a.row, shows), age)
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
        (timeline, reading): (&Timeline, Reading),
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
        // The chunks below are met in ascending order.
        let mut ages = timeline.ages();
        for place in again {
            let index = places[place].chunk;
            let row = row_of(index)?;
            let shows = shows_of(turn, index, row);
            let age = || ages.of(index);
            places[place] = self.judge((turn, reading), (index, row, shows), age)?;
        }
        for &index in &planned[places.len()..] {
            let row = row_of(index)?;
            let shows = shows_of(turn, index, row);
            let age = || ages.of(index);
            places.push(self.judge((turn, reading), (index, row, shows), age)?);
        }
        for place in self.new_places((turn, reading), ages) {
            places.push(place?);
        }
        Some(places)
    }

    /// The place of the chunk at `index`, judged as `row`, `age` steps
    /// old; `None` for one the trim does not follow.
    fn judge(
        &mut self,
        (turn, reading): (&Turn<'_>, Reading),
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
        if reading.checks_starts && !self.starts_clean(&turn.cleared, (index, shows))? {
            return None;
        }
        let chunk = &self.state.chunks[index];
        if row.protected {
            // The protected stay as they are: stubbed by no edit (it
            // clears no protected use).
            let prepared = self.prepared(index, chunk).ok()?;
            let cost = most_a_part_costs(reading.framing, &prepared.part);
            place.judged.protected_cost = (shows == Shows::Body).then_some(cost)?;
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

    /// The stub the last prompt shows for the chunk at `index`, rendered
    /// as `part`: the edit's this turn, or the budget's (an edit's earlier
    /// is the same text, whatever it saves).
    pub(super) fn stub_shown(
        &mut self,
        cleared: &FxHashMap<usize, Arc<CountedText>>,
        index: usize,
        part: &CountedText,
    ) -> Option<Arc<CountedText>> {
        if let Some(stub) = cleared.get(&index) {
            return Some(Arc::clone(stub));
        }
        let chunk = &self.state.chunks[index];
        if let Some(stub) = self.stub(index, chunk, part) {
            return Some(stub);
        }
        let renderer = self.settings.renderers.renderer_for(chunk);
        self.preparer.stub_always(chunk, renderer, part)
    }

    /// Keeps `window`, as a trim's `cuts` left the last build's planned
    /// chunks, for the next trim; `timeline` is the turn's.
    pub(super) fn keep_window(
        &mut self,
        carry: &mut LastBuild,
        (window, cuts): (Window, Cuts),
        timeline: &Timeline,
    ) {
        let mut places = window.places;
        for &place in &cuts.stubbed {
            places[place].shows = Shows::Stub;
            places[place].judged.stubbable = false;
        }
        for &place in &cuts.dropped {
            places[place].shows = Shows::Nothing;
            places[place].judged = Judged::default();
        }
        // The places of the chunks the trim left planned, both in order.
        let mut planned = carry.planned.iter().peekable();
        places.retain(|p| planned.next_if_eq(&&p.chunk).is_some());
        let young_from = timeline.young_from(self.preparer.policy.recent_turns);
        carry.changed_rows = None;
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

/// The most a part costs in a message of any role, whose framing is
/// `framing`: framing, and its tokens alone or followed by another.
pub(super) fn most_a_part_costs(framing: [usize; 3], part: &CountedText) -> usize {
    framing.iter().max().copied().unwrap_or(0) + part.alone().max(part.joined())
}

/// Tokens of the body a row stands for, stubbed or not: what dropping its
/// chunk elides.
pub(super) fn body_tokens(row: &ChunkDecision) -> usize {
    match row.decision {
        Decision::Stubbed { tokens_before, .. } => tokens_before,
        _ => row.tokens,
    }
}
