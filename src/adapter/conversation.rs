//! A native build read back as turns of records, with its tool calls
//! paired the way every provider requires: each call answered in the very
//! next turn, the answers first in it, one answer per call.
//!
//! The planner keeps a call and its results together, but the history may
//! still hold a call with no result yet (the agent's pending call), or a
//! result that is not in the turn right after its call. Those are sent as
//! text, each its own record (one line of JSON): no provider can pair
//! them, and none may receive a half pair.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{ErrorKind, Result};
use crate::model::roles::Role;
use crate::output::message::ContextMessage;
use crate::output::result::BuildResult;
use crate::render::{Protocol, Record};
use crate::tokens::parts::SEPARATOR;

/// The history of a native build, turn by turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Conversation {
    /// The system message's text.
    pub(crate) system: Option<String>,
    /// Tokens of the system message, framing included.
    pub(crate) system_tokens: usize,
    pub(crate) turns: Vec<Turn>,
}

/// One message of the history.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Turn {
    pub(crate) role: Role,
    pub(crate) items: Vec<Record>,
    /// Tokens of the message in the build, framing included.
    pub(crate) tokens: usize,
}

/// What pairing changed, for the request's warnings.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Repairs {
    /// Calls and results sent as text.
    pub(crate) as_text: usize,
}

impl Conversation {
    /// Reads `result`'s messages back into records.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Option`] when `result` was not built with
    /// [`Protocol::Native`].
    pub(crate) fn of(result: &BuildResult) -> Result<Conversation> {
        if result.protocol != Protocol::Native {
            return Err(ErrorKind::Option {
                option: "protocol".into(),
                message: "a native request needs a native build: build with \
                          protocol(Protocol::Native)"
                    .into(),
            }
            .into());
        }
        let system = result.system_message();
        let turns = result.history().map(turn_of).collect::<Result<_>>()?;
        Ok(Conversation {
            system: system.map(|m| m.content.to_string()),
            system_tokens: system.map_or(0, |m| m.tokens),
            turns,
        })
    }

    /// Pairs every call with its results (see the module's docs), merges
    /// the results of one call into one, and drops empty text.
    pub(crate) fn paired(mut self) -> (Conversation, Repairs) {
        let mut repairs = Repairs::default();
        let mut answered: Vec<String> = Vec::new();
        // Providers want every call id once per request.
        let mut used: FxHashSet<String> = FxHashSet::default();
        for index in 0..self.turns.len() {
            let answers = self
                .turns
                .get(index + 1)
                .map(answers_in)
                .unwrap_or_default();
            let turn = &mut self.turns[index];
            let calls_answered = match turn.role {
                Role::Assistant => pair_calls(turn, &answers, &mut used, &mut repairs),
                _ => Vec::new(),
            };
            if turn.role == Role::User {
                answer_first(turn, &answered, &mut repairs);
            }
            answered = calls_answered;
        }
        self.drop_empty_text();
        (self, repairs)
    }

    /// Drops blank text (providers refuse a text block without a visible
    /// character), then the turns left empty, merging the neighbours that
    /// then share a role. A dropped turn's tokens stay with the turn
    /// before it (or the first one after it), so the running count at the
    /// end of each turn is still the build's at the end of a message.
    fn drop_empty_text(&mut self) {
        let mut turns: Vec<Turn> = Vec::with_capacity(self.turns.len());
        let mut carried = 0;
        for mut turn in std::mem::take(&mut self.turns) {
            turn.items
                .retain(|item| !matches!(item, Record::Text { text } if text.trim().is_empty()));
            if turn.items.is_empty() {
                match turns.last_mut() {
                    Some(last) => last.tokens += turn.tokens,
                    None => carried += turn.tokens,
                }
                continue;
            }
            turn.tokens += std::mem::take(&mut carried);
            match turns.last_mut() {
                Some(last) if last.role == turn.role => {
                    last.items.append(&mut turn.items);
                    last.tokens += turn.tokens;
                }
                _ => turns.push(turn),
            }
        }
        self.turns = turns;
    }
}

/// The records of a history message.
fn turn_of(message: &ContextMessage) -> Result<Turn> {
    let items = message
        .content
        .split(SEPARATOR)
        .map(|part| {
            serde_json::from_str(part).map_err(|error| {
                crate::Error::from(ErrorKind::Option {
                    option: "protocol".into(),
                    message: format!(
                        "a history message of this build is not a native record ({error}): \
                         was it built with Protocol::Native?"
                    ),
                })
            })
        })
        .collect::<Result<_>>()?;
    Ok(Turn {
        role: message.role,
        items,
        tokens: message.tokens,
    })
}

/// The call ids a user `turn` answers, in order.
fn answers_in(turn: &Turn) -> Vec<String> {
    if turn.role != Role::User {
        return Vec::new();
    }
    turn.items
        .iter()
        .filter_map(|item| match item {
            Record::ToolResult { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect()
}

/// Sends as text every call of the assistant `turn` that the next turn's
/// `answers` leave out, and every call whose id an earlier call of the
/// request `used`; returns the ids of the calls left native, in order.
fn pair_calls(
    turn: &mut Turn,
    answers: &[String],
    used: &mut FxHashSet<String>,
    repairs: &mut Repairs,
) -> Vec<String> {
    let mut native: Vec<String> = Vec::new();
    for item in &mut turn.items {
        if let Record::ToolCall { id, .. } = item {
            if answers.contains(id) && used.insert(id.clone()) {
                native.push(id.clone());
            } else {
                as_text(item, repairs);
            }
        }
    }
    native
}

/// Puts the results of the previous turn's `answered` calls first in the
/// user `turn`, one per call in call order (several results of one call
/// merged), and sends any other result as text.
fn answer_first(turn: &mut Turn, answered: &[String], repairs: &mut Repairs) {
    let mut results: FxHashMap<String, Record> = FxHashMap::default();
    let mut rest = Vec::with_capacity(turn.items.len());
    for mut item in std::mem::take(&mut turn.items) {
        match &item {
            Record::ToolResult { id, .. } if answered.contains(id) => {
                let id = id.clone();
                match results.get_mut(&id) {
                    Some(first) => merge_result(first, item),
                    None => {
                        results.insert(id, item);
                    }
                }
            }
            Record::ToolResult { .. } => {
                as_text(&mut item, repairs);
                rest.push(item);
            }
            _ => rest.push(item),
        }
    }
    turn.items = answered
        .iter()
        .filter_map(|id| results.remove(id))
        .chain(rest)
        .collect();
}

/// Appends a later result of the same call to `first`.
fn merge_result(first: &mut Record, later: Record) {
    if let (
        Record::ToolResult {
            content, is_error, ..
        },
        Record::ToolResult {
            content: more,
            is_error: failed,
            ..
        },
    ) = (first, later)
    {
        content.push_str(SEPARATOR);
        content.push_str(&more);
        *is_error |= failed;
    }
}

/// Replaces a call or result by its own record as text: the very line
/// the build counted, so sending it costs nothing the build did not count.
/// JSON escaping keeps its body inside the record's strings.
fn as_text(item: &mut Record, repairs: &mut Repairs) {
    let mut text = String::new();
    item.write(&mut text);
    *item = Record::Text { text };
    repairs.as_text += 1;
}
