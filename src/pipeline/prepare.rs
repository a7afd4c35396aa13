//! The prepare stage: the system message's opening parts, the history
//! rendered and counted, the `context_management` edits applied, and the
//! ladder of cuts laid out.

use std::sync::Arc;

use super::edit::Edited;
use super::{Build, Ladder, Prepared};
use crate::budget::{
    ContextManagement, Fate, all_start_clean, fates_after, group_units, plan_steps,
};
use crate::error::Result;
use crate::format::{FragmentFormat, render_fragments};
use crate::render::EscapeMode;
use crate::tokens::parts::CountedText;

impl<'a> Build<'a> {
    /// Renders and counts the history, applies the edits, groups the
    /// history into units and lays out the ladder of cuts.
    pub(super) fn prepare(&mut self) -> Result<Prepared<'a>> {
        let mut system = self.system_parts()?;
        let previous_cut = self.previous.map(|p| &p.cut);
        let mut history = self.prepare_history(previous_cut)?;
        system.extend(std::mem::take(&mut history.system_parts));
        let edited = match self.management() {
            Some(management) => {
                if !all_start_clean(&history.items) {
                    // Measuring then counts joined text: every part needs its text.
                    self.settle_texts(&mut history.items, |_| None)?;
                }
                self.edit(management, &mut history, &system)
            }
            None => Edited::default(),
        };
        let state = self.state;
        let units = group_units(&mut history.items, &state.chunks, &mut history.calls);
        let id_of = |chunk: usize| &history.decisions[chunk].id;
        let (steps, sticky) =
            plan_steps(&history.items, &units, (id_of, previous_cut), &edited.steps);
        if !all_start_clean(&history.items) {
            // The planner will count joined text of whatever the previous
            // cut leaves in: every such chunk needs its text.
            // What that cut keeps may still be stubbed: its fate is open.
            let fates = fates_after(&steps[..sticky], &units, history.items.len());
            self.settle_texts(&mut history.items, |i| {
                (fates[i] != Fate::Kept).then_some(fates[i])
            })?;
        }
        Ok(Prepared {
            history,
            ladder: Ladder {
                units,
                steps,
                sticky,
            },
            system,
            edited,
        })
    }

    /// The edits this build applies: the policy's, else the session's
    /// (none when they only ask for compaction, which edits nothing).
    pub(super) fn management(&self) -> Option<&'a ContextManagement> {
        let policy = self.preparer.policy;
        policy
            .management_of(self.state)
            .filter(|m| m.edits_history())
    }

    /// The system prompt and fragments, in the order they open the system message.
    pub(super) fn system_parts(&self) -> Result<Vec<Arc<CountedText>>> {
        let (settings, state) = (self.settings, self.state);
        let counter = self.preparer.counter;
        let mut system = Vec::new();
        let prompt = settings
            .system_prompt
            .as_deref()
            .or(state.system_prompt.as_deref());
        if let Some(prompt) = prompt.filter(|p| !p.is_empty()) {
            system.push(Arc::new(CountedText::new(
                self.system_prompt_text(prompt),
                counter,
            )));
        }
        if !state.fragments.is_empty() {
            let rendered = render_fragments(
                &state.fragments,
                settings.fragments_format,
                &settings.fragment_options,
            )?;
            let text = self.fragments_text(rendered);
            if !text.is_empty() {
                system.push(Arc::new(CountedText::new(text, counter)));
            }
        }
        Ok(system)
    }

    /// Fragments are data, not instructions: whatever their format, a key or
    /// value must not open or close a message tag, so structural escaping
    /// applies to them in every mode but `none` (it keeps XML well formed,
    /// turning such an element into text); `xml` mode escapes the text
    /// formats in full, like any body.
    fn fragments_text(&self, rendered: String) -> String {
        let settings = self.settings;
        let mode = match (settings.escape, settings.fragments_format) {
            (EscapeMode::None, _) => return rendered,
            (EscapeMode::Xml, format) if format != FragmentFormat::Xml => EscapeMode::Xml,
            _ => EscapeMode::Structural,
        };
        let mut out = String::with_capacity(rendered.len());
        settings
            .renderers
            .context(mode)
            .write_body(&mut out, &rendered);
        out
    }

    /// The system prompt is the caller's own instructions, kept raw except in
    /// `xml` mode, whose promise is that every message parses.
    fn system_prompt_text(&self, prompt: &str) -> String {
        if self.settings.escape == EscapeMode::Xml {
            let mut out = String::with_capacity(prompt.len());
            self.preparer.ctx.write_body(&mut out, prompt);
            out
        } else {
            prompt.to_owned()
        }
    }
}
