//! [`LastBuild`]: a build as the next one reads it. One type serves both
//! readers: a builder given its previous build, and a session, which also
//! extends its last build when a turn only appends chunks (see
//! `pipeline::extend`).

use rustc_hash::FxHashMap;

use crate::budget::{Fate, Policy, PreviousCut, Tally, Timeline};
use crate::model::rows::Rows;
use crate::output::cache::stable_prefix;
use crate::output::message::{ContextMessage, MessageFingerprint, Summary};
use crate::output::result::BuildResult;

/// The last build: the report, whose messages' fingerprints and summary
/// the next build compares with and reuses, and its cut; for a session's,
/// also what extends it.
#[derive(Debug, Clone)]
pub(crate) struct LastBuild {
    /// The build, as returned.
    pub(crate) result: BuildResult,
    /// What it cut: by position for a session's (which keeps it in step
    /// with its edits), by id for a builder's previous build.
    pub(crate) cut: PreviousCut,
    /// Whether a turn that only appended chunks may extend it: a
    /// session's, until an edit. The fields below describe the session it
    /// was built from; a builder's previous build leaves them empty.
    pub(crate) extendable: bool,
    /// Whether `result` is the whole build, which the next one's
    /// [`CacheReport`](crate::CacheReport) compares with: not a build a
    /// store kept, of which only the fingerprints and summary are known.
    pub(crate) whole: bool,
    /// How many chunks the session had then.
    pub(crate) chunks: usize,
    /// The steps, latest user message and newest tool use then.
    pub(crate) timeline: Timeline,
    /// The fingerprint of each call id among those chunks, with the first
    /// and the last chunk that have it (ids sharing a fingerprint share the
    /// entry, which only ever sends a turn to the full pipeline).
    pub(crate) calls: FxHashMap<u64, (usize, usize)>,
    /// The policy it was planned with.
    pub(crate) policy: Policy,
    /// The chunks the next plan starts from, ascending: those in the prompt
    /// outside the system message, and the oldest dropped unit (it places
    /// the marker); the pipeline plans no other dropped chunk again.
    pub(crate) planned: Vec<usize>,
    /// The chunks in the system message, in order.
    pub(crate) system_chunks: Vec<usize>,
    /// The chunks whose rows turns wrote since the last trim kept its
    /// window (see `pipeline::trim_window`); `None` when no kept window
    /// is this build's.
    pub(crate) changed_rows: Option<Vec<usize>>,
    /// Whether the build cut a result of its newest tool use below its
    /// cap to fit: the next build renders it under its cap again, so it
    /// cannot extend this one.
    pub(crate) squeezed: bool,
    /// What `result` costs before trimming (see
    /// `BuildResult::untrimmed_tokens`), once a turn asked: a turn that
    /// extends it adds what it appends (an extension drops nothing; the
    /// bodies an edit stubs in place are added back as it stubs them).
    pub(crate) untrimmed: Option<u64>,
    /// What its lone `clear_tool_uses` edit measured and cleared, when it
    /// applied: a turn that only appends carries the edit on from it.
    pub(crate) tally: Option<Tally>,
}

impl From<&BuildResult> for LastBuild {
    /// The previous build as a builder takes it: its cut by id, not to be
    /// extended.
    fn from(result: &BuildResult) -> Self {
        LastBuild {
            result: result.clone(),
            cut: PreviousCut::by_id(&result.decisions),
            extendable: false,
            whole: true,
            chunks: 0,
            timeline: Timeline::default(),
            calls: FxHashMap::default(),
            policy: Policy::default(),
            planned: Vec::new(),
            system_chunks: Vec::new(),
            changed_rows: None,
            squeezed: false,
            untrimmed: None,
            tally: None,
        }
    }
}

impl LastBuild {
    /// Notes that a turn wrote the row of the chunk at `index` (see
    /// `changed_rows`); past as many as the prompt plans, a trim reads its
    /// window whole again.
    pub(crate) fn note_changed(&mut self, index: usize) {
        let most = self.planned.len().max(64);
        if let Some(changed) = &mut self.changed_rows {
            changed.push(index);
            if changed.len() > most {
                self.changed_rows = None;
            }
        }
    }

    /// A build a store kept (see `engine::record`): its cut by position,
    /// and its messages' fingerprints and summary; not to be extended.
    pub(crate) fn resumed(
        marks: Vec<Fate>,
        fingerprints: Rows<MessageFingerprint>,
        summary: Option<Summary>,
    ) -> Self {
        LastBuild {
            cut: PreviousCut::ByPosition {
                marks,
                removed: FxHashMap::default(),
            },
            whole: false,
            ..LastBuild::from(&BuildResult::carrying(fingerprints, summary))
        }
    }

    /// Tokens at the start of `messages` (fingerprinted as
    /// `fingerprints`) byte-identical to the previous build's (see
    /// `output::cache::stable_prefix`).
    pub(crate) fn stable_prefix_tokens(
        &self,
        messages: &Rows<ContextMessage>,
        fingerprints: &Rows<MessageFingerprint>,
    ) -> usize {
        stable_prefix(messages, fingerprints, self.result.fingerprints.iter())
    }
}
