//! Planning a compaction: the span (whole steps after the compaction in
//! effect, the newest `keep_tokens` of history and the newest tool use
//! kept), its oldest part that fits the summarizer's window, and the
//! request that summarizes it.

use super::request::Request;
use super::token::PlanToken;
use super::{Chat, CompactionOptions, CompactionPlan, PlannedCompaction};
use crate::budget::{Fold, Timeline, kept_from, span_ends};
use crate::error::{ErrorKind, Result};
use crate::model::compaction::SpanSize;
use crate::model::memory::MemoryState;
use crate::pipeline::BuildCache;
use crate::tokens::{Calibration, TokenCounter, counter_for_model_calibrated, model_info};

/// The default most tokens a summary may take.
const DEFAULT_SUMMARY_TOKENS: usize = 2_048;

/// How many chunks are rendered and counted at a time while the span is
/// fitted to the summarizer's window.
const BATCH: usize = 256;

/// Where a plan is made: what its token names, and how a chunk's place is
/// told apart from another chunk with the same id.
pub(crate) struct Scope<'a> {
    /// `session`, or a chat's name and branch.
    pub(crate) name: String,
    /// The place of the chunk at an index: a store's node id, or the index.
    pub(crate) place: &'a dyn Fn(usize) -> u64,
}

/// The options with their defaults settled for one chat.
pub(super) struct Settled {
    pub(super) keep_tokens: usize,
    pub(super) model: String,
    pub(super) window: usize,
    pub(super) summary_tokens: usize,
}

/// Settles `options` for `chat`.
///
/// # Errors
///
/// [`ErrorKind::Option`] for `keep_tokens` over the budget, or a summary
/// that leaves no room in the summarizer's window.
pub(super) fn settle(chat: &Chat<'_>, options: &CompactionOptions) -> Result<Settled> {
    let budget = chat.budget;
    let keep_tokens = options.keep_tokens.unwrap_or(budget / 4);
    if keep_tokens > budget {
        return Err(option_error(
            "keep_tokens",
            format!("{keep_tokens} is over the budget ({budget} tokens); keep at most the budget"),
        ));
    }
    let model = (options.summarizer_model.clone()).unwrap_or_else(|| chat.settings.model.clone());
    let window = options.summarizer_max_tokens.unwrap_or_else(|| {
        model_info(&model)
            .map(|info| info.context_window)
            .unwrap_or(chat.max_tokens)
    });
    let summary_tokens = options
        .summary_tokens
        .unwrap_or(DEFAULT_SUMMARY_TOKENS.min(window / 2));
    if summary_tokens == 0 || summary_tokens >= window {
        return Err(option_error(
            "summarizer_max_tokens",
            format!(
                "the summarizer's window ({window} tokens) must hold more than the summary \
                 ({summary_tokens} tokens, at least 1): raise summarizer_max_tokens or lower \
                 summary_tokens"
            ),
        ));
    }
    Ok(Settled {
        keep_tokens,
        model,
        window,
        summary_tokens,
    })
}

/// The plan of a compaction of `state`, in `scope`.
///
/// # Errors
///
/// As [`settle`], and [`ErrorKind::Tokenizer`] if a tokenizer fails.
pub(crate) fn plan(
    chat: &Chat<'_>,
    (state, cache): (&MemoryState, &mut BuildCache),
    options: &CompactionOptions,
    scope: &Scope<'_>,
) -> Result<CompactionPlan> {
    let settled = settle(chat, options)?;
    let chunks = &state.chunks;
    let previous = Fold::of(chunks);
    let shown = |i: usize| !previous.is_some_and(|f| f.folds(i, &chunks[i]));
    let timeline = Timeline::of(chunks, shown);
    let tail: Vec<usize> = (0..chunks.len()).filter(|&i| shown(i)).collect();
    let tail_tokens = chat.tokens_alone(state, &tail, cache)?;
    let mut by_index = rustc_hash::FxHashMap::default();
    by_index.extend(tail.iter().copied().zip(tail_tokens.iter().copied()));
    let kept = kept_from(chunks, previous, settled.keep_tokens, |i| {
        Ok(by_index.get(&i).copied().unwrap_or(0))
    })?;
    let ends = span_ends(chunks, &timeline, previous, kept);
    let Some(&last) = ends.last() else {
        return Ok(nothing_to_fold(&settled, previous.is_some()));
    };
    let counter = counter_for_model_calibrated(&settled.model, &Calibration::default())?;
    let fitter = Fitter {
        chat,
        state,
        settled: &settled,
        instructions: instructions_of(chat, state, options),
        counter: counter.as_ref(),
        previous,
    };
    let Some((end, request, request_tokens)) = fitter.fit(&ends, cache)? else {
        return Ok(CompactionPlan::Nothing {
            reason: format!(
                "the summarizer's window ({} tokens, {} of them for the summary) cannot hold \
                 the oldest step of the span; raise summarizer_max_tokens or lower \
                 summary_tokens",
                settled.window, settled.summary_tokens
            ),
        });
    };
    let size = |end: usize| {
        let folded = Fold::covering(chunks, end, previous).newly_folded(chunks, previous);
        let tokens = folded.iter().map(|i| by_index.get(i).copied().unwrap_or(0));
        SpanSize {
            chunks: folded.len() as u64,
            tokens: tokens.sum::<usize>() as u64,
        }
    };
    let (folded, all) = (size(end), size(last));
    let token = PlanToken {
        scope: scope.name.clone(),
        covers: chunks[end].id.clone(),
        covers_at: (scope.place)(end),
        previous: previous.map_or(String::new(), |f| chunks[f.compaction].id.clone()),
        folded,
        key: chat.plan_key(),
    };
    Ok(CompactionPlan::Ready(PlannedCompaction {
        plan: token.encode(),
        covers: chunks[end].id.clone(),
        folded,
        remaining: SpanSize {
            chunks: all.chunks - folded.chunks,
            tokens: all.tokens.saturating_sub(folded.tokens),
        },
        request: request.to_json(
            options.request_format,
            &settled.model,
            settled.summary_tokens,
        ),
        request_tokens,
        request_tokens_exact: counter.is_exact(),
        summary_tokens: settled.summary_tokens,
    }))
}

/// The plan's instructions: its own, else those of a `compact_20260112`
/// edit in the `context_management` in effect (the default template when
/// neither gives any).
fn instructions_of<'a>(
    chat: &'a Chat<'_>,
    state: &'a MemoryState,
    options: &'a CompactionOptions,
) -> Option<&'a str> {
    let edit = (chat.settings.policy.management_of(state)).and_then(|m| m.compaction());
    (options.instructions.as_deref()).or_else(|| edit.and_then(|e| e.instructions.as_deref()))
}

/// The plan when no step can be folded.
fn nothing_to_fold(settled: &Settled, compacted: bool) -> CompactionPlan {
    let since = if compacted {
        "since the last compaction "
    } else {
        ""
    };
    CompactionPlan::Nothing {
        reason: format!(
            "nothing to fold: the history {since}is within keep_tokens ({} tokens) and the \
             newest tool use, or holds no whole step before them",
            settled.keep_tokens
        ),
    }
}

/// Fits a span to the summarizer's window.
struct Fitter<'a> {
    chat: &'a Chat<'a>,
    state: &'a MemoryState,
    settled: &'a Settled,
    instructions: Option<&'a str>,
    counter: &'a dyn TokenCounter,
    previous: Option<Fold>,
}

impl Fitter<'_> {
    /// The newest of `ends` whose request fits the summarizer's window,
    /// with the request and its exact tokens; `None` when even the first
    /// does not fit.
    fn fit(
        &self,
        ends: &[usize],
        cache: &mut BuildCache,
    ) -> Result<Option<(usize, Request, usize)>> {
        let room = self.settled.window - self.settled.summary_tokens;
        let chunks = &self.state.chunks;
        let last = *ends.last().unwrap_or(&0);
        let all = Fold::covering(chunks, last, self.previous).newly_folded(chunks, self.previous);
        // Counted oldest first, each with the separator after it, until
        // the window is full: an estimate that errs high only where the
        // task of a shorter span is counted in.
        let empty = Request::new(self.instructions, self.settled.summary_tokens, &[]);
        let mut total = empty.tokens(self.counter);
        let mut counted = Vec::new();
        for batch in all.chunks(BATCH) {
            for part in self.chat.rendered_alone(self.state, batch, cache)? {
                total += self.counter.count(&format!("{}\n\n", part.text));
                counted.push(total);
            }
            if total > room {
                break;
            }
        }
        let fits = |end: usize| {
            // The chunks of `all` that a span to `end` takes: the leading
            // ones (the previous task and summary), then those up to `end`.
            let from_previous =
                |i: usize| (self.previous).is_some_and(|p| i <= p.covers || i == p.compaction);
            let front = all.iter().take_while(|&&i| from_previous(i)).count();
            let taken = front + all[front..].partition_point(|&i| i <= end);
            taken > 0 && counted.get(taken - 1).is_some_and(|&t| t <= room)
        };
        let mut candidate = ends.partition_point(|&end| fits(end));
        while candidate > 0 {
            let end = ends[candidate - 1];
            let request = self.request(end, cache)?;
            let tokens = request.tokens(self.counter);
            if tokens <= room {
                return Ok(Some((end, request, tokens)));
            }
            candidate -= 1;
        }
        Ok(None)
    }

    /// The request that summarizes a span ending at `end`.
    fn request(&self, end: usize, cache: &mut BuildCache) -> Result<Request> {
        let chunks = &self.state.chunks;
        let folded = Fold::covering(chunks, end, self.previous).newly_folded(chunks, self.previous);
        let parts = self.chat.rendered_alone(self.state, &folded, cache)?;
        let texts: Vec<&str> = parts.iter().map(|p| p.text.as_str()).collect();
        Ok(Request::new(
            self.instructions,
            self.settled.summary_tokens,
            &texts,
        ))
    }
}

fn option_error(option: &str, message: String) -> crate::Error {
    ErrorKind::Option {
        option: option.to_owned(),
        message,
    }
    .into()
}
