//! The record of a branch's last build, kept in the store so that the next
//! build, in any process, extends it as a session extends its own: the
//! same cut, repeated while it fits, and the same prompt, byte for byte.
//!
//! It holds what a session's last build hands the next one: each chunk's
//! fate by position (kept, stubbed or dropped for the budget), its
//! messages' fingerprints (for `stable_prefix_tokens`) and its summary,
//! with the head and the settings it was made under. It also says where
//! the next build reads back to (the *frontier*: every chunk older than it
//! is out of the prompt but for the *islands*, read by node in one query,
//! and the chunks no budget drops, found through the path tallies), so a
//! build reads the window and what was added since, not the whole branch.
//!
//! The record is advisory: the next build extends it only under the same
//! [`plan key`](crate::settings::Settings::plan_key), on a head that
//! descends from its head; a record that does not read is ignored. A stale
//! or damaged record can only make another prompt, never one over budget,
//! without a protected chunk, or with a call apart from its results: those
//! rules are the build's, whatever it starts from. Its islands are trusted
//! as this crate wrote them, ancestors of its head (checked only to sit at
//! distinct kept positions older than the frontier), and so are its counts
//! of the builds' own texts (see `tokens::known`), as the store's chunks
//! and their counts are trusted.

use serde::{Deserialize, Serialize};

use crate::budget::{Fate, fate_of, never_dropped};
use crate::model::memory::MemoryChunk;
use crate::model::roles::Role;
use crate::model::rows::Rows;
use crate::output::message::{MessageFingerprint, Summary};
use crate::output::result::{BuildResult, PreviousBuild};
use crate::store::NodeId;
use crate::tokens::Encoding;
use crate::tokens::known::{KnownCount, KnownCounts};

/// The version of the record's layout: a record of another version is
/// read as no record.
const FORMAT: u32 = 3;

/// What reading one island costs, in chunks read back: they are read in
/// one go, by node, and their ids make the record longer.
const ISLAND_COST: usize = 2;

/// The most islands a record names: older chunks in the prompt are read
/// with the window instead.
const MOST_ISLANDS: usize = 4_096;

/// A branch's last build, as the next build extends it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct BuildRecord {
    /// The head it was built at.
    pub(super) head: NodeId,
    /// How many chunks the branch held at `head`.
    pub(super) chunks: usize,
    /// The plan key of its settings and policy.
    pub(super) key: String,
    /// Each chunk's fate, by position: `chunks` of them.
    pub(super) marks: Vec<Fate>,
    /// Where the next build reads back to (see the module's docs).
    pub(super) frontier: usize,
    /// The nodes of the chunks older than `frontier` in the prompt, but
    /// those no budget drops, by position.
    pub(super) islands: Vec<NodeId>,
    /// How many of the chunks older than `frontier` it dropped for the
    /// budget, and their tokens, as its elided-history marker counted
    /// them: the next build counts them so without reading them.
    pub(super) dropped: (usize, usize),
    /// Its messages' fingerprints and its summary.
    pub(super) fingerprints: Rows<MessageFingerprint>,
    pub(super) summary: Option<Summary>,
    /// The counts of the builds' own short texts (the system prompt, the
    /// marker, stubs), so that the next process need not load the
    /// tokenizer to count them (see `tokens::known`).
    pub(super) counts: KnownCounts,
}

impl BuildRecord {
    /// The record of `result`, built at `head` (of `chunks` chunks) under
    /// `key`. `marks` are every chunk's fates before this build (what it
    /// did not plan keeps its mark); `planned` are the chunks it planned,
    /// `((position, node), chunk)`, one per decision, ascending. The chunks
    /// before `unread.0` it did not read, dropped, `unread.1` of them with
    /// their tokens.
    pub(super) fn of_build<'a>(
        (head, chunks, key): (NodeId, usize, String),
        mut marks: Vec<Fate>,
        unread: (usize, (usize, usize)),
        planned: impl Iterator<Item = ((usize, NodeId), &'a MemoryChunk)>,
        result: &BuildResult,
    ) -> Self {
        marks.resize(chunks, Fate::Kept);
        let (mut in_prompt, mut dropped_at) = (Vec::new(), Vec::new());
        for (((position, node), chunk), decision) in planned.zip(&result.decisions) {
            if let Some(mark) = marks.get_mut(position) {
                *mark = fate_of(decision);
            }
            if decision.is_included() && !never_dropped(chunk) {
                in_prompt.push((position, node));
            } else if fate_of(decision) == Fate::Dropped {
                dropped_at.push((position, decision.tokens));
            }
        }
        // What was not read stays unread: the frontier is no older.
        let (floor, (mut count, mut tokens)) = unread;
        let positions: Vec<usize> = in_prompt.iter().map(|&(p, _)| p).collect();
        let forced = positions.partition_point(|&p| p < floor);
        let split = forced + cheapest_split(&positions[forced..], chunks, forced);
        let frontier = positions.get(split).copied().unwrap_or(chunks);
        for &(_, dropped) in dropped_at.iter().filter(|(p, _)| *p < frontier) {
            count = count.saturating_add(1);
            tokens = tokens.saturating_add(dropped);
        }
        BuildRecord {
            head,
            chunks,
            key,
            marks,
            frontier,
            islands: in_prompt[..split].iter().map(|&(_, node)| node).collect(),
            dropped: (count, tokens),
            fingerprints: result.fingerprints.clone(),
            summary: result.summary.clone(),
            counts: KnownCounts::default(),
        }
    }

    /// The fate the record gives the chunk at `position` (kept past its end).
    pub(super) fn mark(&self, position: usize) -> Fate {
        self.marks.get(position).copied().unwrap_or_default()
    }

    /// The record as the store keeps it.
    pub(super) fn encode(&self) -> String {
        let wire = Wire {
            format: FORMAT,
            head: self.head,
            chunks: self.chunks,
            key: self.key.clone(),
            marks: encode_marks(&self.marks),
            frontier: self.frontier,
            islands: self.islands.clone(),
            dropped: self.dropped,
            messages: (self.fingerprints.iter())
                .map(|f| (f.role.as_str().to_owned(), f.len, f.hash, f.growable))
                .collect(),
            summary: (self.summary.as_ref()).map(|s| (s.chunks, s.tokens, s.body.clone())),
            counts: encode_counts(&self.counts),
        };
        serde_json::to_string(&wire).unwrap_or_default()
    }

    /// The record `text` holds, if it reads as one of this format whose
    /// parts agree and was made at a head of at most `most_chunks` chunks:
    /// else [`HeadMoved`](PreviousBuild::HeadMoved) for a longer head,
    /// [`Unreadable`](PreviousBuild::Unreadable) for the rest.
    pub(super) fn decode(text: &str, most_chunks: usize) -> Result<Self, PreviousBuild> {
        let wire: Wire = serde_json::from_str(text).map_err(|_| PreviousBuild::Unreadable)?;
        if wire.format == FORMAT && wire.chunks > most_chunks {
            return Err(PreviousBuild::HeadMoved);
        }
        Self::of_wire(wire).ok_or(PreviousBuild::Unreadable)
    }

    fn of_wire(wire: Wire) -> Option<Self> {
        if wire.format != FORMAT {
            return None;
        }
        let marks = decode_marks(&wire.marks, wire.chunks)?;
        // The dropped chunks are older than the frontier, and none costs
        // more than a count can say.
        let (dropped, tokens) = wire.dropped;
        let agree = wire.frontier <= wire.chunks
            && (wire.islands.len().checked_add(dropped)).is_some_and(|n| n <= wire.frontier)
            && tokens <= dropped.saturating_mul(u32::MAX as usize);
        if !agree {
            return None;
        }
        let fingerprints = (wire.messages.into_iter())
            .map(|(role, len, hash, growable)| {
                Some(MessageFingerprint {
                    role: role_named(&role)?,
                    len,
                    hash,
                    growable,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(BuildRecord {
            head: wire.head,
            chunks: wire.chunks,
            key: wire.key,
            marks,
            frontier: wire.frontier,
            islands: wire.islands,
            dropped: wire.dropped,
            fingerprints: fingerprints.into(),
            summary: (wire.summary).map(|(chunks, tokens, body)| Summary {
                chunks,
                tokens,
                body,
            }),
            counts: known_counts(wire.counts)?,
        })
    }
}

/// How many of the chunks in the prompt (`in_prompt`, ascending
/// positions, of `chunks`, after `islands` older ones) the next build
/// fetches one by one rather than with the window it reads back: the split
/// that reads the fewest chunks, counting [`ISLAND_COST`] per island.
fn cheapest_split(in_prompt: &[usize], chunks: usize, islands: usize) -> usize {
    let cost = |split: usize| {
        let read = chunks - in_prompt.get(split).copied().unwrap_or(chunks);
        split * ISLAND_COST + read
    };
    let most = in_prompt.len().min(MOST_ISLANDS.saturating_sub(islands));
    (0..=most)
        .min_by_key(|&split| (cost(split), split))
        .unwrap_or(0)
}

/// The record's layout in the store.
#[derive(Serialize, Deserialize)]
struct Wire {
    format: u32,
    head: NodeId,
    chunks: usize,
    key: String,
    marks: String,
    frontier: usize,
    islands: Vec<NodeId>,
    dropped: (usize, usize),
    /// `(role, length, hash, growable tokens)` per message.
    messages: Vec<(String, usize, u64, usize)>,
    /// `(chunks, tokens, text)`.
    summary: Option<(usize, usize, String)>,
    /// `(encoding, [(text, tokens)])`, in the order first noted: a run of
    /// counts by one encoding names it once.
    counts: Vec<(String, Vec<(String, usize)>)>,
}

/// `counts` as the record writes them, each run of one encoding together.
fn encode_counts(counts: &KnownCounts) -> Vec<(String, Vec<(String, usize)>)> {
    let counts: Vec<&KnownCount> = counts.iter().collect();
    (counts.chunk_by(|a, b| a.encoding == b.encoding))
        .map(|run| {
            let texts = run.iter().map(|c| (c.text.to_string(), c.tokens)).collect();
            (run[0].encoding.name().to_owned(), texts)
        })
        .collect()
}

/// The counts the record names, if each is of a known encoding.
fn known_counts(runs: Vec<(String, Vec<(String, usize)>)>) -> Option<KnownCounts> {
    let mut counts = Vec::new();
    for (encoding, texts) in runs {
        let encoding = Encoding::from_name(&encoding)?;
        counts.extend(texts.into_iter().map(|(text, tokens)| KnownCount {
            encoding,
            text: text.into(),
            tokens,
        }));
    }
    Some(KnownCounts::of(counts))
}

/// Fates as runs: `k` kept, `s` stubbed, `d` dropped, each followed by how
/// many, e.g. `d812k40s1k3`.
fn encode_marks(marks: &[Fate]) -> String {
    let mut text = String::new();
    for run in marks.chunk_by(|a, b| a == b) {
        let letter = match run[0] {
            Fate::Kept => 'k',
            Fate::Stubbed => 's',
            Fate::Dropped => 'd',
        };
        text.push(letter);
        text.push_str(&run.len().to_string());
    }
    text
}

/// The fates `text` writes, if they are exactly `chunks` of them.
fn decode_marks(text: &str, chunks: usize) -> Option<Vec<Fate>> {
    let mut runs = Vec::new();
    let mut total = 0usize;
    let mut rest = text;
    while let Some(letter) = rest.chars().next() {
        let fate = match letter {
            'k' => Fate::Kept,
            's' => Fate::Stubbed,
            'd' => Fate::Dropped,
            _ => return None,
        };
        rest = &rest[1..];
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let count: usize = rest[..digits].parse().ok()?;
        total = total
            .checked_add(count)
            .filter(|&t| count > 0 && t <= chunks)?;
        runs.push((fate, count));
        rest = &rest[digits..];
    }
    (total == chunks).then(|| {
        (runs.into_iter())
            .flat_map(|(fate, count)| std::iter::repeat_n(fate, count))
            .collect()
    })
}

fn role_named(name: &str) -> Option<Role> {
    [Role::System, Role::User, Role::Assistant]
        .into_iter()
        .find(|role| role.as_str() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_read_back_as_written_and_nothing_else_reads() {
        let marks = [
            vec![Fate::Dropped; 812],
            vec![Fate::Kept; 40],
            vec![Fate::Stubbed],
            vec![Fate::Kept; 3],
        ]
        .concat();
        let text = encode_marks(&marks);
        assert_eq!(text, "d812k40s1k3");
        assert_eq!(decode_marks(&text, marks.len()), Some(marks));
        assert_eq!(decode_marks("", 0), Some(Vec::new()));
        for bad in [
            "k",
            "k0",
            "x3",
            "k-1",
            "k3d",
            "k99999999999999999999",
            "3k",
            "k4294967295",
        ] {
            assert_eq!(decode_marks(bad, 3), None, "{bad:?} read");
        }
        assert_eq!(decode_marks("k2", 3), None, "too few");
        assert_eq!(decode_marks("k2d2", 3), None, "too many");
    }

    fn record(chunks: usize, frontier: usize, dropped: (usize, usize)) -> BuildRecord {
        BuildRecord {
            head: 7,
            chunks,
            key: "key".into(),
            marks: vec![Fate::Dropped; chunks],
            frontier,
            islands: Vec::new(),
            dropped,
            fingerprints: Rows::new(),
            summary: None,
            counts: KnownCounts::default(),
        }
    }

    #[test]
    fn a_record_reads_back_only_when_its_parts_agree() {
        let mut good = record(10, 8, (8, 800));
        // Two runs of one encoding around another's: three runs.
        let counted = [
            (Encoding::O200kBase, "system"),
            (Encoding::O200kBase, "<a/>"),
            (Encoding::Cl100kBase, "<a/>"),
            (Encoding::O200kBase, "user"),
        ];
        good.counts = KnownCounts::of(counted.map(|(encoding, text)| KnownCount {
            encoding,
            text: text.into(),
            tokens: text.len(),
        }));
        assert_eq!(encode_counts(&good.counts).len(), 3);
        assert_eq!(BuildRecord::decode(&good.encode(), 10), Ok(good.clone()));
        let unknown = good.encode().replace("o200k_base", "p99k");
        let read = BuildRecord::decode(&unknown, 10);
        assert_eq!(read, Err(PreviousBuild::Unreadable), "an unknown encoding");
        let past = BuildRecord::decode(&good.encode(), 9);
        assert_eq!(past, Err(PreviousBuild::HeadMoved), "a longer head");
        let torn = BuildRecord::decode("{", 10);
        assert_eq!(torn, Err(PreviousBuild::Unreadable));
        for bad in [
            record(10, 11, (0, 0)),
            record(10, 8, (9, 0)),
            record(10, 8, (usize::MAX, 0)),
            record(10, 8, (1, usize::MAX)),
        ] {
            let read = BuildRecord::decode(&bad.encode(), 10);
            assert_eq!(read, Err(PreviousBuild::Unreadable), "{bad:?}");
        }
    }

    #[test]
    fn the_split_fetches_old_stragglers_and_reads_the_dense_window() {
        // Old user messages kept among dropped bulk, then a dense window.
        let mut in_prompt: Vec<usize> = (0..10).map(|i| i * 50).collect();
        in_prompt.extend(900..1000);
        assert_eq!(cheapest_split(&in_prompt, 1000, 0), 10);
        // Everything in the prompt: read it all.
        let all: Vec<usize> = (0..100).collect();
        assert_eq!(cheapest_split(&all, 100, 0), 0);
        assert_eq!(cheapest_split(&[], 100, 0), 0);
        // No more islands than a record names.
        assert_eq!(cheapest_split(&in_prompt, 1000, MOST_ISLANDS), 0);
    }
}
