//! Where an Anthropic request marks its cacheable prefix.
//!
//! Anthropic caches the prompt up to each block marked with `cache_control`
//! (at most 4 marks), and a mark finds an earlier cache entry only within
//! the 20 blocks before it. The end of the system prompt is marked on
//! every build (it is the same from turn to turn, so the first build
//! writes the entry the next ones read); in the history, marks go only
//! where the prompt is unchanged since the previous build: the end of the
//! stable prefix, with up to two more inside it so that no stretch between
//! marks is longer than the look-back. A prefix shorter than the model's
//! minimum is not cached, so it is not marked.

use serde::Serialize;

use super::conversation::{Conversation, Turn};
use crate::model::roles::Role;
use crate::render::Record;

/// Most marks a request may carry.
pub(crate) const MAX_BREAKPOINTS: usize = 4;

/// How many blocks before a mark the provider looks for a cache entry.
pub(crate) const LOOKBACK_BLOCKS: usize = 20;

/// A `cache_control` mark of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CacheBreakpoint {
    /// Index of the marked message in `messages`; `None` for the system prompt.
    pub message: Option<usize>,
    /// Index of the marked block in that message's content.
    pub block: usize,
    /// Tokens of the prompt up to and including the marked block.
    pub prefix_tokens: usize,
}

/// The fewest tokens a prefix needs for `model` to cache it, as Anthropic
/// documents: 4096 for Claude Opus 4.5 and Haiku 4.5, 2048 for the Haiku
/// 3 and 3.5 models, 1024 for the others.
pub(crate) fn min_cacheable_tokens(model: &str) -> usize {
    const LARGE: [&str; 2] = ["claude-opus-4-5", "claude-haiku-4-5"];
    const MEDIUM: [&str; 3] = ["claude-3-haiku", "claude-3-5-haiku", "claude-haiku-3"];
    if LARGE.iter().any(|p| model.starts_with(p)) {
        4096
    } else if MEDIUM.iter().any(|p| model.starts_with(p)) {
        2048
    } else {
        1024
    }
}

/// The marks for `conversation`, whose first `stable_tokens` tokens
/// (system message included) are unchanged since the previous build.
pub(crate) fn breakpoints(
    conversation: &Conversation,
    stable_tokens: Option<usize>,
    min_tokens: usize,
) -> Vec<CacheBreakpoint> {
    let mut marks = Vec::new();
    let stable_tokens = stable_tokens.unwrap_or(0);
    if conversation.system.is_some() && conversation.system_tokens >= min_tokens {
        marks.push(CacheBreakpoint {
            message: None,
            block: 0,
            prefix_tokens: conversation.system_tokens,
        });
    }
    let ends = stable_turn_ends(conversation, stable_tokens);
    let Some(&last) = ends.last() else {
        return marks;
    };
    // From the stable end backwards, the earliest turn end within the
    // look-back of the mark after it, while marks are left.
    let room = MAX_BREAKPOINTS - marks.len();
    let mut chosen = vec![last];
    while chosen.len() < room {
        let nearest = chosen[chosen.len() - 1];
        if nearest.blocks_before <= LOOKBACK_BLOCKS {
            break;
        }
        let reach = nearest.blocks_before - LOOKBACK_BLOCKS;
        match ends
            .iter()
            .find(|end| end.blocks_before >= reach && end.blocks_before < nearest.blocks_before)
        {
            Some(end) => chosen.push(*end),
            None => break,
        }
    }
    marks.extend(
        chosen
            .iter()
            .rev()
            .filter(|end| end.prefix_tokens >= min_tokens)
            .map(|end| CacheBreakpoint {
                message: Some(end.turn),
                block: end.block,
                prefix_tokens: end.prefix_tokens,
            }),
    );
    marks
}

/// The end of a turn inside the stable prefix.
#[derive(Debug, Clone, Copy)]
struct TurnEnd {
    turn: usize,
    /// The turn's last block.
    block: usize,
    /// Blocks of the history up to this one.
    blocks_before: usize,
    prefix_tokens: usize,
}

/// The ends of the turns whose request is the same as the previous
/// build's. A turn is, when it and the turn after it are unchanged: an
/// assistant turn's calls are sent natively or as text depending on the
/// turn after it, so the last unchanged turn counts only when it is a user
/// turn.
fn stable_turn_ends(conversation: &Conversation, stable_tokens: usize) -> Vec<TurnEnd> {
    let mut ends = Vec::new();
    let mut tokens = conversation.system_tokens;
    let mut blocks = 0;
    let mut last_stable = None;
    for (index, turn) in conversation.turns.iter().enumerate() {
        tokens += turn.tokens;
        if tokens > stable_tokens {
            break;
        }
        last_stable = Some(index);
        blocks += turn.items.len();
        // Anthropic takes no mark on a thinking block.
        let markable = turn
            .items
            .iter()
            .rposition(|item| !matches!(item, Record::Thinking { .. }));
        if let Some(block) = markable {
            ends.push(TurnEnd {
                turn: index,
                block,
                blocks_before: blocks,
                prefix_tokens: tokens,
            });
        }
    }
    // Only the turn the stable prefix ends on has a changed turn after it.
    let ends_on_last = |end: &TurnEnd| Some(end.turn) == last_stable;
    if ends
        .last()
        .is_some_and(|end| ends_on_last(end) && depends_on_next(&conversation.turns[end.turn]))
    {
        ends.pop();
    }
    ends
}

/// Whether how `turn` is sent depends on the turn after it: its calls are
/// native only when answered, and a final assistant text is trimmed.
fn depends_on_next(turn: &Turn) -> bool {
    let trimmed_if_last = matches!(
        turn.items.last(),
        Some(Record::Text { text }) if text.ends_with(char::is_whitespace)
    );
    turn.role == Role::Assistant
        && (trimmed_if_last
            || turn.items.iter().any(|item| {
                matches!(item, Record::ToolCall { .. })
                    || matches!(item, Record::Text { text } if text.starts_with("<tool_call"))
            }))
}
