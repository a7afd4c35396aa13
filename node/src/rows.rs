//! A session's report and `openai` messages, turn after turn, at the cost
//! of the rows that changed.
//!
//! A report's long lists (`messages`, `decisions`, and `included`, a view
//! of the messages' ids) are rows of persistent vectors: a turn that
//! appends shares every old row with the turn before, at the same address.
//! The cache keeps the last build (so those rows stay alive and unchanged:
//! a row two builds share is never changed in place) and the index each
//! of its rows had in the list the package's JavaScript last received. The
//! next output writes a row it shares as that index, and the JavaScript
//! takes its own value of the row at that index: only new rows are written
//! as JSON, parsed, and made into JavaScript values. Results thus share the
//! values of unchanged rows with earlier results of the same session.
//!
//! The output is `{"head": HEAD, "messages": [...], "included": [...],
//! "decisions": [...]}` (`openai`: `head` and `messages` only), where a
//! row is its JSON or an integer (the index of the same row before), and
//! `head` is the report with those lists still to fill in (its `excluded`
//! and `truncated` views complete).

use std::fmt::Write;

use agent_context::budget::Decision;
use agent_context::command::{Output, openai_message};
use agent_context::{BuildResult, Rows};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// The lists written row by row, in the order of [`RowCache::lists`].
const MESSAGES: usize = 0;
const INCLUDED: usize = 1;
const DECISIONS: usize = 2;

/// Where each row of one build went: its address, and its index in its list.
type Indexes = [FxHashMap<usize, u32>; 3];

/// The last build and where its rows went, for one output.
#[derive(Default)]
pub struct RowCache {
    /// Boxed so that no row moves: a small list holds its rows inline.
    kept: Option<Box<BuildResult>>,
    /// The output the rows were written for.
    output: Option<Output>,
    lists: Indexes,
    /// `ai-sdk`: the messages last written, in order.
    messages: Vec<serde_json::Value>,
}

impl RowCache {
    /// Whether `output` is one this cache writes from the build itself.
    pub fn handles(output: Output) -> bool {
        matches!(output, Output::Report | Output::Openai)
    }

    /// `body`, the `ai-sdk` output (`{system, messages}`), each message
    /// equal to the one at its place in the last `ai-sdk` output written as
    /// that index. Its messages are not rows of the build (a call and its
    /// result pair across messages), so they are compared as values: a
    /// turn that appends, or stubs an old result in place, keeps the
    /// places of the others.
    pub fn write_messages(&mut self, mut body: serde_json::Value) -> String {
        if self.output != Some(Output::AiSdk) {
            self.messages.clear();
            self.output = Some(Output::AiSdk);
        }
        let messages = match body.get_mut("messages").map(serde_json::Value::take) {
            Some(serde_json::Value::Array(messages)) => messages,
            _ => Vec::new(),
        };
        let mut out = String::with_capacity(4096);
        out.push_str("{\"head\":");
        write_json(&mut out, &body);
        out.push_str(",\"messages\":[");
        for (index, message) in messages.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            match self.messages.get(index) {
                Some(before) if before == message => {
                    let _ = write!(out, "{index}");
                }
                _ => write_json(&mut out, message),
            }
        }
        out.push_str("]}");
        self.messages = messages;
        out
    }

    /// `result` in `output` (report or openai), its rows the previous
    /// output shares written as their indexes.
    pub fn write(&mut self, result: &BuildResult, output: Output) -> String {
        if self.output != Some(output) {
            self.lists = Indexes::default();
            self.output = Some(output);
        }
        // The rows are read from the cache's own copy, whose addresses stay
        // taken while it is kept.
        let result = Box::new(result.clone());
        let mut next = Indexes::default();
        let mut out = String::with_capacity(4096);
        out.push_str("{\"head\":");
        if output == Output::Openai {
            out.push_str("{\"messages\":[]},\"messages\":");
            let model = result.model.as_str();
            let message = |m| openai_message(m, model);
            self.list(
                &mut out,
                result.messages.iter(),
                MESSAGES,
                &mut next,
                message,
            );
        } else {
            write_json(&mut out, &head(&result));
            out.push_str(",\"messages\":");
            self.list(&mut out, result.messages.iter(), MESSAGES, &mut next, |m| m);
            out.push_str(",\"included\":");
            self.list(&mut out, result.included(), INCLUDED, &mut next, |id| id);
            out.push_str(",\"decisions\":");
            self.list(
                &mut out,
                result.decisions.iter(),
                DECISIONS,
                &mut next,
                |d| d,
            );
        }
        out.push('}');
        self.lists = next;
        self.kept = Some(result);
        out
    }

    /// Writes `rows` as a JSON array: a row the last output had as its
    /// index there, any other as the JSON of `shape(row)`.
    fn list<'r, T: 'r, S: Serialize>(
        &self,
        out: &mut String,
        rows: impl Iterator<Item = &'r T>,
        list: usize,
        next: &mut Indexes,
        shape: impl Fn(&'r T) -> S,
    ) {
        out.push('[');
        for (index, row) in rows.enumerate() {
            if index > 0 {
                out.push(',');
            }
            let address = std::ptr::from_ref(row) as usize;
            match self.lists[list].get(&address) {
                Some(before) => {
                    let _ = write!(out, "{before}");
                }
                None => write_json(out, &shape(row)),
            }
            next[list].insert(address, u32::try_from(index).unwrap_or(u32::MAX));
        }
        out.push(']');
    }
}

/// The report without its row lists: no messages (so `included` is empty
/// too), and only the decisions its `excluded` and `truncated` views list.
fn head(result: &BuildResult) -> BuildResult {
    let mut head = result.clone();
    head.messages = Rows::new();
    head.decisions = result
        .decisions
        .iter()
        .filter(|d| !d.is_included() || matches!(d.decision, Decision::Truncated { .. }))
        .cloned()
        .collect();
    head
}

/// Appends the JSON of `value` (which, being plain data, always has one).
fn write_json(out: &mut String, value: &impl Serialize) {
    if let Ok(json) = serde_json::to_string(value) {
        out.push_str(&json);
    }
}
