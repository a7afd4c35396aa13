//! A build's report read back from its JSON (`--previous REPORT.json`):
//! enough of the [`BuildResult`] for the next build to keep its cut and
//! to say what its prompt cache keeps.

use serde::Deserialize;

use crate::budget::{ChunkDecision, Elision};
use crate::error::{ErrorKind, Result};
use crate::model::chunk_id::ChunkId;
use crate::model::roles::Role;
use crate::output::message::{ChunkSpans, ContextMessage, fingerprints};
use crate::output::result::{BuildResult, CompactionInEffect};

/// The fields of a report the next build reads.
#[derive(Deserialize)]
struct Report {
    model: String,
    encoding: String,
    budget: usize,
    max_tokens: usize,
    reserve_output: usize,
    token_count: usize,
    #[serde(default)]
    token_count_exact: bool,
    messages: Vec<Message>,
    decisions: Vec<ChunkDecision>,
    elided: Option<Elision>,
    trim_target: Option<usize>,
    compaction: Option<CompactionInEffect>,
    settings_key: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    role: Role,
    content: String,
    #[serde(default)]
    chunk_ids: Vec<ChunkId>,
    tokens: usize,
}

impl BuildResult {
    /// A build's report (`--output report`, the JSON this type serializes
    /// to) read back as the previous build of the next one: for
    /// [`ContextBuilder::previous`](crate::ContextBuilder::previous) and
    /// [`cache_since`](BuildResult::cache_since).
    ///
    /// The report does not say which content tokens of a message stay when
    /// it grows, so a message of it that the next prompt grows counts none
    /// in `stable_prefix_tokens` (a lower bound, as ever); nor does it keep
    /// the summary of elided history, which the next build writes afresh.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Option`] naming `source` (`--previous`) when `json` is
    /// not a build's report.
    pub fn from_report(json: &str, source: &str) -> Result<BuildResult> {
        let refused = |message: String| ErrorKind::Option {
            option: source.to_owned(),
            message: format!(
                "{message}; pass the JSON report of an earlier build (`--output report`, the default)"
            ),
        };
        let report: Report = serde_json::from_str(json)
            .map_err(|error| refused(format!("not a build's report: {error}")))?;
        let settings_key = match &report.settings_key {
            Some(key) => Some(
                u64::from_str_radix(key, 16)
                    .map_err(|_| refused(format!("settings_key {key:?} is not 16 hex digits")))?,
            ),
            None => None,
        };
        let messages: crate::Rows<ContextMessage> = (report.messages.into_iter())
            .map(|message| ContextMessage {
                role: message.role,
                content: message.content.into(),
                chunk_ids: message.chunk_ids.into_iter().collect(),
                tokens: message.tokens,
                spans: ChunkSpans::new(),
            })
            .collect();
        let unknown_growth = vec![0; messages.len()];
        let mut result = BuildResult::carrying(fingerprints(&messages, &unknown_growth), None);
        result.model = report.model;
        result.encoding = report.encoding;
        result.budget = report.budget;
        result.max_tokens = report.max_tokens;
        result.reserve_output = report.reserve_output;
        result.token_count = report.token_count;
        result.token_count_exact = report.token_count_exact;
        result.messages = messages;
        result.decisions = report.decisions.into_iter().collect();
        result.elided = report.elided;
        result.trim_target = report.trim_target;
        result.compaction = report.compaction;
        result.settings_key = settings_key;
        Ok(result)
    }
}
