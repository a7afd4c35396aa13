//! The plan stage: the cut that fits the budget, and the summary that may
//! stand for what it elides.

use std::sync::Arc;

use super::assemble::summarize;
use super::{Build, Ladder, Planned, Prepared};
use crate::budget::{HISTORY_START_TAG, Planner, framing_table};
use crate::error::{ErrorKind, Result};
use crate::render::history_note;
use crate::tokens::parts::CountedText;

impl<'a> Build<'a> {
    /// Plans the cut of the prepared history (cutting the newest tool
    /// results further when nothing else fits) and summarizes what it
    /// elides.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::BudgetExceeded`] when the protected content alone does
    /// not fit.
    pub(super) fn plan(&mut self, mut prepared: Prepared<'a>) -> Result<Planned<'a>> {
        let Prepared {
            history,
            ladder,
            system,
            ..
        } = &mut prepared;
        let base = self.planner(system, ladder, history.frozen);
        let base = self.outside_planned_by(base, &history.items);
        let mut layout = self
            .plan_fitting(&base, history)
            .map_err(|required| self.over_budget(required))?;
        let mut warnings = Vec::new();
        let planner = Planner {
            items: &history.items,
            ..base
        };
        let previous = self.previous.and_then(|p| p.result.summary.as_ref());
        let summary = summarize(
            &planner,
            &mut layout,
            (self.state, &self.preparer),
            previous,
            &mut warnings,
        );
        Ok(Planned {
            prepared,
            layout,
            summary,
            warnings,
        })
    }

    /// The error of a build whose protected content needs `required` tokens.
    fn over_budget(&self, required: usize) -> crate::Error {
        ErrorKind::BudgetExceeded {
            required,
            available: self.budget.available,
            max_tokens: self.budget.max_tokens,
            reserve_output: self.settings.reserve_output,
        }
        .into()
    }

    /// The history-start note a user-first prompt opens with.
    pub(super) fn history_start(&self) -> CountedText {
        let protocol = self.settings.renderers.protocol();
        let text = history_note(protocol, format!("<{HISTORY_START_TAG}/>"));
        CountedText::new(text, self.preparer.counter)
    }

    /// The planner of this build over `system` and `ladder`, with
    /// `frozen` chunks and tokens dropped unplanned, before it is given the
    /// items.
    pub(super) fn planner<'p>(
        &self,
        system: &'p [Arc<CountedText>],
        ladder: &'p Ladder,
        frozen: (usize, usize),
    ) -> Planner<'p>
    where
        'a: 'p,
    {
        let settings = self.settings;
        let counter = self.preparer.counter;
        let protocol = settings.renderers.protocol();
        Planner {
            counter,
            framing: framing_table(settings.framing, counter),
            priming: settings.framing.priming(),
            system,
            items: &[],
            units: &ladder.units,
            steps: &ladder.steps,
            sticky: ladder.sticky,
            user_first: settings.user_first,
            available: self.budget.available,
            low_water: self.preparer.policy.low_water,
            frozen,
            marker_at: None,
            history_start: self.history_start(),
            protocol,
        }
    }
}
