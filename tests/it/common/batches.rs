//! Batches of chunks that writer processes append, and the checks that a
//! store holds them whole.

use std::process::{ExitStatus, Output};
use std::time::Duration;

/// Chunks per `chat append`: a batch is stored whole or not at all.
pub const BATCH: usize = 3;

/// SplitMix64: reproducible delays without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`), near enough for delays.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A duration uniform in `0..max`.
    pub fn duration(&mut self, max: Duration) -> Duration {
        let micros = u64::try_from(max.as_micros()).unwrap_or(u64::MAX).max(1);
        Duration::from_micros(self.below(micros))
    }
}

/// The id of chunk `index` of batch `batch`: `b{batch}-{index}`.
pub fn chunk_id(batch: usize, index: usize) -> String {
    format!("b{batch}-{index}")
}

/// The batch number of chunk id `b{batch}-{index}`.
pub fn batch_of(id: &str) -> Option<usize> {
    id.strip_prefix('b')?.split_once('-')?.0.parse().ok()
}

/// The text of chunk `id`, `len` bytes long and derived from the id, so a
/// chunk stored with another chunk's text, or cut short, is caught.
pub fn body(id: &str, len: usize) -> String {
    let mut text = format!("{id}:");
    while text.len() < len {
        text.push_str(" the quick brown fox ");
        text.push_str(id);
        text.push_str(" jumps over the lazy dog.");
    }
    text.truncate(len);
    text
}

/// Batch `batch` as JSON Lines, the input `chat append` reads.
pub fn batch_lines(batch: usize, text_len: usize) -> String {
    (0..BATCH)
        .map(|index| {
            let id = chunk_id(batch, index);
            let chunk = serde_json::json!({
                "id": id, "kind": "agent", "role": "user", "text": body(&id, text_len),
            });
            format!("{chunk}\n")
        })
        .collect()
}

/// The batch numbers of a branch's chunk ids, in order, if the branch is
/// made of whole batches: each run of [`BATCH`] ids is `b{n}-0`, `b{n}-1`,
/// …, of one `n`. Says where it is not.
pub fn batch_order(ids: &[String]) -> Result<Vec<usize>, String> {
    if !ids.len().is_multiple_of(BATCH) {
        return Err(format!(
            "{} chunks is not a whole number of batches of {BATCH}: {ids:?}",
            ids.len()
        ));
    }
    ids.chunks(BATCH)
        .enumerate()
        .map(|(position, run)| {
            let batch = batch_of(&run[0])
                .ok_or_else(|| format!("chunk id {:?} is not a batch's", run[0]))?;
            let whole = (0..BATCH).map(|index| chunk_id(batch, index));
            if !whole.eq(run.iter().cloned()) {
                return Err(format!(
                    "batch {position} on the branch is not one whole batch: {run:?}"
                ));
            }
            Ok(batch)
        })
        .collect()
}

/// How many batches the branch holds, if it is exactly batches `0..k` in
/// order, each whole.
pub fn whole_batch_prefix(ids: &[String]) -> Result<usize, String> {
    let order = batch_order(ids)?;
    match order.iter().enumerate().find(|&(i, &batch)| i != batch) {
        Some((i, batch)) => Err(format!(
            "batch {batch} stands where batch {i} should: batches {order:?}"
        )),
        None => Ok(order.len()),
    }
}

/// Asserts an `agent-context` process succeeded, showing its standard
/// error if not.
pub fn assert_success(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what}: agent-context failed ({}): {}",
        describe(output.status),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// How a process ended: its exit code, or (on Unix) the signal that ended it.
pub fn describe(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit code {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("signal {signal}");
        }
    }
    "unknown status".into()
}

/// Checks that `ids` (a branch) holds every batch of `writers` writers of
/// `per_writer` batches each (writer `w` wrote batches `w * per_writer..`)
/// exactly once and whole, each writer's in the order it wrote them;
/// returns how many times the branch switches from one writer to another.
pub fn assert_writers_interleaved(ids: &[String], writers: usize, per_writer: usize) -> usize {
    assert_eq!(ids.len(), writers * per_writer * BATCH);
    let order = batch_order(ids).unwrap_or_else(|e| panic!("{e}"));
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..writers * per_writer).collect::<Vec<_>>());
    for writer in 0..writers {
        let own: Vec<usize> = order
            .iter()
            .copied()
            .filter(|batch| batch / per_writer == writer)
            .collect();
        assert!(
            own.is_sorted(),
            "writer {writer}'s batches out of order: {own:?}"
        );
    }
    order
        .windows(2)
        .filter(|w| w[0] / per_writer != w[1] / per_writer)
        .count()
}

/// The crash tests' seed: `AGENT_CONTEXT_CRASH_SEED`, or a fixed one.
pub fn crash_seed() -> u64 {
    std::env::var("AGENT_CONTEXT_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_C0FF_EE00_u64)
}

/// Checks a crash round: a killed writer leaves the `batches` stored
/// before it or one more, a finished one exactly one more. Returns how
/// many batches the killed writer committed (0 or 1; 0 if it finished).
pub fn assert_round(round: usize, seed: u64, batches: usize, stored: usize, killed: bool) -> usize {
    if killed {
        assert!(
            stored == batches || stored == batches + 1,
            "round {round} (seed {seed:#x}): {batches} batches before, {stored} after a kill"
        );
        stored - batches
    } else {
        assert_eq!(
            stored,
            batches + 1,
            "round {round}: a finished append is stored"
        );
        0
    }
}
