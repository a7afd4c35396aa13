//! Anthropic's `context_management` request object, applied by us for
//! every model: which tool uses and thinking a build clears before it
//! plans, and the `applied_edits` it reports.
//!
//! The types mirror Anthropic's JSON, field for field:
//!
//! ```json
//! {"edits": [
//!   {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}},
//!   {"type": "clear_tool_uses_20250919",
//!    "trigger": {"type": "input_tokens", "value": 100000},
//!    "keep": {"type": "tool_uses", "value": 3},
//!    "clear_at_least": {"type": "input_tokens", "value": 5000},
//!    "exclude_tools": ["memory"],
//!    "clear_tool_inputs": true}
//! ]}
//! ```
//!
//! Semantics, as Anthropic documents them:
//!
//! * `clear_tool_uses_20250919` fires when the unedited prompt (every
//!   chunk kept, cut only by its cap) costs more than `trigger`'s input
//!   tokens (default 100,000), or, with `{"type": "tool_uses", "value": N}`,
//!   when there are more than N tool uses. A **tool use** is a tool call
//!   with its results. When it fires, every tool use older than the newest
//!   `keep` (default 3, counted over all tool uses) is cleared, except the
//!   uses of `exclude_tools`: each of its results becomes a stub (the chunk
//!   stays, with tag, id and attributes, so the pair stays valid), and its
//!   call becomes a stub too when `clear_tool_inputs` is `true` or lists
//!   the tool. If `clear_at_least` is set and clearing frees fewer tokens,
//!   the edit is not applied at all.
//! * `clear_thinking_20251015` keeps the thinking of the newest `keep`
//!   thinking turns (a thinking turn is one model call's thinking; default
//!   1), or all of it with `"keep": "all"`, and removes the rest.
//!
//! `keep` counts tool calls one by one, as Anthropic counts `tool_use`
//! blocks: with two parallel calls in the newest step and `keep` 1, the
//! older of the two is cleared. The caller's `keep` decides there; the
//! budget's own protection of the newest tool use (which holds whenever no
//! `context_management` is given) does not override it. Each entry of
//! `applied_edits` counts only what that edit cleared and no earlier edit
//! had, and an edit that clears nothing new is not listed. A tool that
//! `exclude_tools` or `clear_tool_inputs` names and no chunk has gives a
//! warning, as a cap on an unknown tool does.
//!
//! Our choices where Anthropic's are silent: thinking is cleared before tool
//! uses whatever the order of the edits (Anthropic asks for it first), and
//! edits of one type apply in their order; chunks that protect themselves
//! (pinned, `critical`) are never cleared, nor are the tool uses they
//! belong to, though they count among the tool uses `keep` keeps; nor is a
//! chunk whose custom renderer writes no stub. Without
//! `context_management`, nothing is cleared while the prompt fits; with it,
//! the edits run first and the budget's ladder (stubs, then drops) runs
//! after them only when the edited prompt does not fit.

use serde::{Deserialize, Serialize};

/// Anthropic's `context_management`: the edits a build applies before it
/// plans. `{"edits": []}` clears nothing.
///
/// It is made from Anthropic's JSON (it implements `Deserialize`, and a
/// session's `context_management` field reads it) and written back as it
/// came; the edits' types are not part of the API, as their JSON is the
/// contract.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ContextManagement {
    /// The edits, in order.
    #[serde(default)]
    pub(crate) edits: Vec<ContextEdit>,
}

/// One edit of [`ContextManagement`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum ContextEdit {
    /// `clear_tool_uses_20250919`.
    #[serde(rename = "clear_tool_uses_20250919")]
    ClearToolUses(ClearToolUses),
    /// `clear_thinking_20251015`.
    #[serde(rename = "clear_thinking_20251015")]
    ClearThinking(ClearThinking),
    /// `compact_20260112`: a build only says when compaction is due (see
    /// `docs/compaction.md`); it clears nothing.
    #[serde(rename = "compact_20260112")]
    Compact(Compact),
}

/// `compact_20260112`, as Anthropic's API takes it. A build never calls a
/// model: its `trigger` sets when a build reports `compaction_due`, and its
/// `instructions` are the default instructions of a compaction's plan.
/// `pause_after_compaction` is kept and has no effect here.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Compact {
    /// When compaction is due (default: more than 150,000 input tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<InputTokens>,
    /// Instructions for the summarizer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Whether Anthropic's API pauses after compacting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_after_compaction: Option<bool>,
}

/// The default trigger of `compact_20260112`, in input tokens.
pub(crate) const DEFAULT_COMPACT_TOKENS: u64 = 150_000;

impl Compact {
    /// The input tokens above which compaction is due.
    pub(crate) fn trigger_tokens(&self) -> u64 {
        self.trigger.map_or(
            DEFAULT_COMPACT_TOKENS,
            |InputTokens::InputTokens { value }| value,
        )
    }
}

/// `clear_tool_uses_20250919`: clears old tool uses once the prompt is large.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ClearToolUses {
    /// When the edit fires (default: more than 100,000 input tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<Trigger>,
    /// How many of the newest tool uses stay (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep: Option<KeepToolUses>,
    /// The edit applies only if it frees at least this many tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear_at_least: Option<InputTokens>,
    /// Tools whose uses are never cleared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_tools: Option<Vec<String>>,
    /// Whether the cleared uses' calls are stubbed too: all of them, or
    /// those of the listed tools. Default `false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear_tool_inputs: Option<ClearToolInputs>,
}

/// When `clear_tool_uses` fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Trigger {
    /// When the unedited prompt costs more than `value` tokens.
    InputTokens {
        /// Tokens.
        value: u64,
    },
    /// When there are more than `value` tool uses.
    ToolUses {
        /// Tool uses.
        value: u64,
    },
}

/// `{"type": "tool_uses", "value": N}`: the newest N tool uses stay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum KeepToolUses {
    /// Tool uses.
    ToolUses {
        /// How many.
        value: u64,
    },
}

/// `{"type": "input_tokens", "value": N}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum InputTokens {
    /// Tokens.
    InputTokens {
        /// How many.
        value: u64,
    },
}

/// `clear_tool_inputs`: `true`/`false`, or the tools whose inputs are cleared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum ClearToolInputs {
    /// Every cleared use's input, or none.
    All(bool),
    /// The inputs of these tools' cleared uses.
    Tools(Vec<String>),
}

/// `clear_thinking_20251015`: removes the thinking of old model calls.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ClearThinking {
    /// Which thinking stays (default: the newest thinking turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep: Option<KeepThinking>,
}

/// `"all"`, or `{"type": "thinking_turns", "value": N}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum KeepThinking {
    /// `"all"`: nothing is cleared.
    All(AllThinking),
    /// The thinking of the newest N thinking turns stays.
    Turns(ThinkingTurns),
}

/// The string `"all"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AllThinking {
    /// `"all"`.
    All,
}

/// `{"type": "thinking_turns", "value": N}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum ThinkingTurns {
    /// Thinking turns.
    ThinkingTurns {
        /// How many.
        value: u64,
    },
}

/// An edit that cleared something, in Anthropic's response shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum AppliedEdit {
    /// `clear_tool_uses_20250919`.
    #[serde(rename = "clear_tool_uses_20250919")]
    ClearToolUses {
        /// Tool uses this edit stubbed (their results, or their calls'
        /// inputs) that no earlier edit had.
        cleared_tool_uses: usize,
        /// The prompt's exact tokens before the edit minus after it
        /// (negative in the rare case where stubs cost more than tiny bodies).
        cleared_input_tokens: i64,
    },
    /// `clear_thinking_20251015`.
    #[serde(rename = "clear_thinking_20251015")]
    ClearThinking {
        /// Thinking turns removed.
        cleared_thinking_turns: usize,
        /// The prompt's exact tokens before the edit minus after it.
        cleared_input_tokens: i64,
    },
}

/// The default trigger of `clear_tool_uses`, in input tokens.
pub(crate) const DEFAULT_TRIGGER_TOKENS: u64 = 100_000;
/// The default number of tool uses `clear_tool_uses` keeps.
pub(crate) const DEFAULT_KEEP_TOOL_USES: u64 = 3;

impl ClearToolUses {
    /// Whether the edit fires on a prompt of `unedited_tokens` tokens with
    /// `tool_uses` tool uses.
    pub(crate) fn fires(&self, unedited_tokens: usize, tool_uses: usize) -> bool {
        match self.trigger {
            Some(Trigger::ToolUses { value }) => tool_uses as u64 > value,
            Some(Trigger::InputTokens { value }) => unedited_tokens as u64 > value,
            None => unedited_tokens as u64 > DEFAULT_TRIGGER_TOKENS,
        }
    }

    /// How many of the newest tool uses stay.
    pub(crate) fn keeps(&self) -> usize {
        let KeepToolUses::ToolUses { value } = self.keep.unwrap_or(KeepToolUses::ToolUses {
            value: DEFAULT_KEEP_TOOL_USES,
        });
        usize::try_from(value).unwrap_or(usize::MAX)
    }

    /// Whether the uses of `tool` are never cleared.
    pub(crate) fn excludes(&self, tool: Option<&str>) -> bool {
        let listed = |tools: &Vec<String>| tool.is_some_and(|t| tools.iter().any(|x| x == t));
        self.exclude_tools.as_ref().is_some_and(listed)
    }

    /// Whether a cleared use of `tool` has its call stubbed too.
    pub(crate) fn clears_input(&self, tool: Option<&str>) -> bool {
        match &self.clear_tool_inputs {
            None => false,
            Some(ClearToolInputs::All(all)) => *all,
            Some(ClearToolInputs::Tools(tools)) => {
                tool.is_some_and(|t| tools.iter().any(|x| x == t))
            }
        }
    }

    /// The fewest tokens the edit must free to apply.
    pub(crate) fn at_least(&self) -> u64 {
        self.clear_at_least
            .map_or(0, |InputTokens::InputTokens { value }| value)
    }
}

impl ContextManagement {
    /// Whether a build applies these edits to the history: any edit but
    /// `compact_20260112`, or none at all (`{"edits": []}` asks for Anthropic's
    /// rules and clears nothing).
    pub(crate) fn edits_history(&self) -> bool {
        self.edits.is_empty()
            || self
                .edits
                .iter()
                .any(|e| !matches!(e, ContextEdit::Compact(_)))
    }

    /// The `compact_20260112` edit, if one is given (the first).
    pub(crate) fn compaction(&self) -> Option<&Compact> {
        self.edits.iter().find_map(|e| match e {
            ContextEdit::Compact(compact) => Some(compact),
            _ => None,
        })
    }

    /// A warning for each tool that an edit's `exclude_tools` or
    /// `clear_tool_inputs` names and `has_tool` does not know: a misspelt
    /// tool would otherwise exclude or clear nothing, silently. Each tool
    /// is named once per field, at the first edit that names it.
    pub(crate) fn unknown_tool_warnings(&self, has_tool: impl Fn(&str) -> bool) -> Vec<String> {
        let mut warnings = Vec::new();
        let mut named: rustc_hash::FxHashSet<(&str, &str)> = Default::default();
        for (index, edit) in self.edits.iter().enumerate() {
            let ContextEdit::ClearToolUses(edit) = edit else {
                continue;
            };
            let inputs = match &edit.clear_tool_inputs {
                Some(ClearToolInputs::Tools(tools)) => tools.as_slice(),
                _ => &[],
            };
            let lists = [
                (
                    "exclude_tools",
                    edit.exclude_tools.as_deref().unwrap_or(&[]),
                    "excludes",
                ),
                ("clear_tool_inputs", inputs, "clears"),
            ];
            for (field, tools, verb) in lists {
                for tool in tools.iter().filter(|tool| !has_tool(tool)) {
                    if !named.insert((field, tool.as_str())) {
                        continue;
                    }
                    warnings.push(format!(
                        "context_management.edits[{index}].{field} names tool {tool:?}: no \
                         chunk has this tool, so it {verb} nothing"
                    ));
                }
            }
        }
        warnings
    }
}

impl ClearThinking {
    /// How many of the newest thinking turns keep their thinking (`None`: all).
    pub(crate) fn keeps(&self) -> Option<usize> {
        match self.keep {
            Some(KeepThinking::All(_)) => None,
            Some(KeepThinking::Turns(ThinkingTurns::ThinkingTurns { value })) => {
                Some(usize::try_from(value).unwrap_or(usize::MAX))
            }
            None => Some(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_objects_read_verbatim_and_write_back() {
        let json = r#"{"edits":[{"type":"clear_thinking_20251015","keep":{"type":"thinking_turns","value":2}},{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":100000},"keep":{"type":"tool_uses","value":3},"clear_at_least":{"type":"input_tokens","value":5000},"exclude_tools":["memory"],"clear_tool_inputs":true}]}"#;
        let management: ContextManagement = serde_json::from_str(json).unwrap();
        assert_eq!(serde_json::to_string(&management).unwrap(), json);
        let ContextEdit::ClearToolUses(clear) = &management.edits[1] else {
            panic!("{management:?}")
        };
        assert_eq!(clear.keeps(), 3);
        assert!(clear.excludes(Some("memory")) && !clear.excludes(Some("bash")));
        assert!(clear.clears_input(Some("bash")));
        assert_eq!(clear.at_least(), 5000);
        assert!(clear.fires(100_001, 0) && !clear.fires(100_000, 99));

        let all: ClearThinking = serde_json::from_str(r#"{"keep":"all"}"#).unwrap();
        assert_eq!(all.keeps(), None);
        let listed: ClearToolUses =
            serde_json::from_str(r#"{"clear_tool_inputs":["bash"]}"#).unwrap();
        assert!(listed.clears_input(Some("bash")) && !listed.clears_input(Some("grep")));
        assert_eq!(ClearThinking::default().keeps(), Some(1));
    }

    #[test]
    fn unknown_fields_and_types_are_refused() {
        for bad in [
            r#"{"edits":[{"type":"clear_everything"}]}"#,
            r#"{"edits":[{"type":"clear_tool_uses_20250919","keep_all":true}]}"#,
            r#"{"edits":[{"type":"clear_thinking_20251015","keep":"some"}]}"#,
            r#"{"edit":[]}"#,
        ] {
            assert!(
                serde_json::from_str::<ContextManagement>(bad).is_err(),
                "{bad}"
            );
        }
    }
}
