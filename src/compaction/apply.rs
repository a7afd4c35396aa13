//! Applying a plan: checked against the history as it stands now, then
//! made into the `compaction` chunk the caller appends.

use super::span::Scope;
use super::token::PlanToken;
use super::{AppliedCompaction, Chat, CompactionSummary};
use crate::budget::{Fold, Timeline, span_ends};
use crate::error::{ErrorKind, Result};
use crate::model::compaction::{CompactionFields, SpanSize};
use crate::model::memory::{MemoryChunk, MemoryState};
use crate::model::roles::ChunkKind;
use crate::pipeline::BuildCache;

/// A compaction chunk made from a plan, with what its span showed and
/// what the summary costs instead.
pub(crate) struct Compaction {
    pub(crate) chunk: MemoryChunk,
    pub(crate) tokens_before: u64,
    pub(crate) tokens_after: u64,
}

impl Compaction {
    /// What applying it did, before the caller says where it was saved.
    pub(crate) fn applied(&self) -> AppliedCompaction {
        AppliedCompaction {
            chat: None,
            branch: None,
            head: None,
            compaction: self.chunk.id.clone(),
            covers: self.chunk.covers().unwrap_or_default().to_owned(),
            tokens_before: self.tokens_before,
            tokens_after: self.tokens_after,
        }
    }
}

/// The compaction chunk that applies `plan` with `summary` to `state`.
///
/// # Errors
///
/// [`ErrorKind::Compaction`] for a plan that no longer holds (made for
/// another chat or settings, its covered chunk rewound away, another
/// compaction applied since, the span changed) and for a summary that is
/// empty or no smaller than what it folds; [`ErrorKind::Tokenizer`] if a
/// tokenizer fails.
pub(crate) fn apply(
    chat: &Chat<'_>,
    (state, cache): (&MemoryState, &mut BuildCache),
    (plan, summary): (&str, CompactionSummary),
    scope: &Scope<'_>,
) -> Result<Compaction> {
    let token = PlanToken::decode(plan).map_err(refused)?;
    let chunks = &state.chunks;
    let previous = Fold::of(chunks);
    let covers = check_plan(&token, state, previous, scope, chat)?;
    let fold = Fold::covering(chunks, covers, previous);
    let folded = fold.newly_folded(chunks, previous);
    let tokens = chat.tokens_alone(state, &folded, cache)?;
    let span = SpanSize {
        chunks: folded.len() as u64,
        tokens: tokens.iter().sum::<usize>() as u64,
    };
    if span != token.folded {
        return Err(refused(format!(
            "the chunks the plan folds changed since it was made ({} chunks of {} tokens then, \
             {} of {} now): plan again",
            token.folded.chunks, token.folded.tokens, span.chunks, span.tokens
        )));
    }
    let before = match previous {
        Some(previous) => folded_before(chat, (state, cache), previous)?,
        None => SpanSize::default(),
    };
    let mut chunk = MemoryChunk::new(free_id(state, &token.covers), ChunkKind::Compaction);
    let text = summary.text.trim();
    chunk.text = (!text.is_empty()).then(|| summary.text.clone());
    chunk.compaction = Some(Box::new(CompactionFields {
        covers: Some(token.covers.clone().into_boxed_str()),
        native: summary.native,
        folded: Some(SpanSize {
            chunks: before.chunks + span.chunks,
            tokens: before.tokens + span.tokens,
        }),
    }));
    if chunk.validate_at(chunks.len()).is_err() {
        return Err(refused(
            "the summary is empty: give its text (or an Anthropic compaction block with \
             readable content)"
                .into(),
        ));
    }
    let alone = MemoryState::new().with_chunk(chunk.clone());
    let after = chat.tokens_alone(&alone, &[0], &mut BuildCache::new())?[0] as u64;
    if after >= span.tokens {
        return Err(refused(format!(
            "the summary ({after} tokens as the prompt shows it) is not smaller than what it \
             folds ({} tokens): shorten it",
            span.tokens
        )));
    }
    Ok(Compaction {
        chunk,
        tokens_before: span.tokens,
        tokens_after: after,
    })
}

/// The chunks of `state` a compaction covering the chunk `covers` would
/// fold that the prompt still shows (the previous summary among them),
/// in the order the prompt showed them: what its summary stands for.
pub(crate) fn folded_by<'s>(state: &'s MemoryState, covers: &str) -> Vec<&'s MemoryChunk> {
    let chunks = &state.chunks;
    let previous = Fold::of(chunks);
    let Some(index) = chunks.iter().rposition(|c| c.id == covers) else {
        return Vec::new();
    };
    let fold = Fold::covering(chunks, index, previous);
    let folded = fold.newly_folded(chunks, previous);
    folded.into_iter().map(|i| &chunks[i]).collect()
}

/// The index of the chunk `token` covers, once the plan is found to hold
/// for `state`, whose compaction in effect is `previous`.
fn check_plan(
    token: &PlanToken,
    state: &MemoryState,
    previous: Option<Fold>,
    scope: &Scope<'_>,
    chat: &Chat<'_>,
) -> Result<usize> {
    if token.scope != scope.name {
        return Err(refused(format!(
            "the plan was made for {}, not {}: plan again here",
            describe(&token.scope),
            describe(&scope.name)
        )));
    }
    if token.key != chat.plan_key() {
        return Err(refused(
            "the plan was made under other settings (model, budget, caps or policy): plan \
             again with these"
                .into(),
        ));
    }
    let chunks = &state.chunks;
    let in_effect = previous.map_or("", |f| chunks[f.compaction].id.as_str());
    if in_effect != token.previous {
        return Err(refused(match token.previous.as_str() {
            "" => format!(
                "another compaction ({in_effect}) has covered the history since the plan: plan \
                 again"
            ),
            planned => format!(
                "the compaction in effect is {in_effect:?}, not {planned:?} as when planned (a \
                 compaction applied, or the branch rewound, since): plan again"
            ),
        }));
    }
    let first = previous.map_or(0, |f| f.covers + 1);
    let covers = chunks.iter().rposition(|c| c.id == token.covers);
    let Some(index) = covers.filter(|&i| i >= first && (scope.place)(i) == token.covers_at) else {
        return Err(refused(format!(
            "chunk {:?}, which the plan covers, is no longer on this branch where the plan saw \
             it (rewound, or restored elsewhere): plan again",
            token.covers
        )));
    };
    // The rules the plan followed, asked again of the branch as it is:
    // whole steps, never the newest tool use.
    let shown = |i: usize| !previous.is_some_and(|f| f.folds(i, &chunks[i]));
    let timeline = Timeline::of(chunks, shown);
    if !span_ends(chunks, &timeline, previous, chunks.len()).contains(&index) {
        return Err(refused(format!(
            "chunk {:?}, which the plan covers, does not end a whole step before the newest \
             tool use: plan again",
            token.covers
        )));
    }
    Ok(index)
}

/// What the compaction in effect folds, from its own figures, else
/// counted.
fn folded_before(
    chat: &Chat<'_>,
    (state, cache): (&MemoryState, &mut BuildCache),
    previous: Fold,
) -> Result<SpanSize> {
    let chunks = &state.chunks;
    if let Some(stated) = chunks[previous.compaction].folded() {
        return Ok(stated);
    }
    let folded: Vec<usize> = (0..chunks.len())
        .filter(|&i| previous.folds(i, &chunks[i]))
        .collect();
    let tokens = chat.tokens_alone(state, &folded, cache)?;
    Ok(SpanSize {
        chunks: folded.len() as u64,
        tokens: tokens.iter().sum::<usize>() as u64,
    })
}

/// An id for the compaction of `covers` that no chunk of `state` has.
fn free_id(state: &MemoryState, covers: &str) -> String {
    let taken = |id: &str| state.chunks.iter().any(|c| c.id == id);
    let base = format!("compaction-{covers}");
    (1..)
        .map(|n| match n {
            1 => base.clone(),
            n => format!("{base}-{n}"),
        })
        .find(|id| !taken(id))
        .unwrap_or(base)
}

/// A scope as a message names it.
fn describe(scope: &str) -> String {
    match scope.split_once('\u{1e}') {
        Some((chat, branch)) => format!("chat {chat:?}, branch {branch:?}"),
        None => format!("a {scope}"),
    }
}

fn refused(message: String) -> crate::Error {
    ErrorKind::Compaction { message }.into()
}
