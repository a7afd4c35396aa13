//! The report stage: the [`BuildResult`] of the assembled messages.

use super::assemble::Assembly;
use super::{Assembled, Build};
use crate::model::rows::Rows;
use crate::output::message::{ContextMessage, fingerprints};
use crate::output::result::BuildResult;
use crate::render::Protocol;

impl Build<'_> {
    /// The build's result: the assembled messages with their fingerprints
    /// and what they share with the previous build, and what became of
    /// each chunk.
    pub(super) fn report(self, assembled: Assembled) -> BuildResult {
        let Assembled {
            assembly:
                Assembly {
                    messages,
                    growable: growable_prefix_tokens,
                    last_part,
                },
            decisions,
            total,
            elision,
            trim_target,
            summary,
            applied_edits,
            warnings,
        } = assembled;
        let (settings, counter, mut budget) = (self.settings, self.preparer.counter, self.budget);
        budget.warnings.extend(warnings);
        let messages: Rows<ContextMessage> = messages.into();
        let fingerprints = fingerprints(&messages, &growable_prefix_tokens);
        let stable_prefix_tokens =
            (self.previous).map(|p| p.stable_prefix_tokens(&messages, &fingerprints));
        let protocol = settings.renderers.protocol();
        BuildResult {
            model: settings.model.clone(),
            encoding: counter.encoding_name().to_owned(),
            budget: budget.available,
            max_tokens: budget.max_tokens,
            reserve_output: settings.reserve_output,
            token_count: total,
            token_count_exact: counter.is_exact() && protocol == Protocol::Text,
            messages,
            elided: elision,
            trim_target,
            stable_prefix_tokens,
            cache: None,
            settings_key: Some(settings.cache_key(self.preparer.policy)),
            fingerprints,
            summary,
            last_part,
            protocol,
            decisions: decisions.into(),
            unread_chunks: 0,
            applied_edits,
            warnings: budget.warnings,
            previous_build: None,
            compaction: self.compaction,
            compaction_due: None,
        }
    }
}
