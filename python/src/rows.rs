//! A session's outputs as Python values, turn after turn, at the cost of
//! the rows that changed.
//!
//! A report's long lists (`messages`, `decisions`, and `included`, a view
//! of the messages' ids) are rows of persistent vectors: a turn that
//! appends shares every old row with the turn before, at the same address. The cache keeps the last build (so
//! those rows stay alive and unchanged: a row two builds share is never
//! changed in place) and the Python value of each of its rows by address;
//! the next output takes the value of every row it shares and converts
//! only the others, the library shaping each row as the CLI does. Results
//! thus share the values of unchanged rows with earlier results of the
//! same session.

use agent_context::BuildResult;
use agent_context::command::Output;
use agent_context::command::openai_message;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::to_python::{to_python, to_python_skipping};

/// The report's fields converted row by row.
const ROW_FIELDS: [&str; 3] = ["messages", "included", "decisions"];

/// The last build and the Python value of each of its rows, for one output.
#[derive(Default)]
pub struct RowCache {
    /// Boxed so that no row moves: a small list holds its rows inline.
    kept: Option<Box<BuildResult>>,
    /// The output the values are of.
    output: Option<Output>,
    rows: FxHashMap<usize, Py<PyAny>>,
}

/// The values of one build's rows, by address, as they are made.
type Next = FxHashMap<usize, Py<PyAny>>;

impl RowCache {
    /// Whether `output` is one this cache makes.
    pub fn handles(output: Output) -> bool {
        matches!(output, Output::Report | Output::Openai)
    }

    /// `result` in `output` (report or openai) as `json.loads` reads the
    /// CLI's JSON.
    pub fn convert<'py>(
        &mut self,
        py: Python<'py>,
        result: &BuildResult,
        output: Output,
    ) -> PyResult<Bound<'py, PyAny>> {
        if self.output != Some(output) {
            self.rows.clear();
            self.output = Some(output);
        }
        // The rows are read from the cache's own copy, whose addresses stay
        // taken while it is kept.
        let result = Box::new(result.clone());
        let mut next = Next::default();
        next.reserve(2 * result.messages.len() + result.decisions.len());
        let value = match output {
            Output::Openai => {
                let model = result.model.as_str();
                let messages = self.list(py, result.messages.iter(), &mut next, |m| {
                    to_python(py, &openai_message(m, model))
                })?;
                let dict = PyDict::new(py);
                dict.set_item("messages", messages)?;
                dict.into_any()
            }
            _ => self.report(py, &result, &mut next)?,
        };
        self.rows = next;
        self.kept = Some(result);
        Ok(value)
    }

    fn report<'py>(
        &self,
        py: Python<'py>,
        result: &BuildResult,
        next: &mut Next,
    ) -> PyResult<Bound<'py, PyAny>> {
        let report = to_python_skipping(py, result, &ROW_FIELDS)?;
        let dict = report.cast::<PyDict>()?;
        dict.set_item(
            "messages",
            self.list(py, result.messages.iter(), next, |r| to_python(py, r))?,
        )?;
        dict.set_item(
            "included",
            self.list(py, result.included(), next, |r| to_python(py, r))?,
        )?;
        dict.set_item(
            "decisions",
            self.list(py, result.decisions.iter(), next, |r| to_python(py, r))?,
        )?;
        Ok(report)
    }

    /// The Python list of `rows`, each row's value taken from the last
    /// build's by address, else made by `convert`.
    fn list<'py, 'r, T: Serialize + 'r>(
        &self,
        py: Python<'py>,
        rows: impl Iterator<Item = &'r T>,
        next: &mut Next,
        convert: impl Fn(&T) -> PyResult<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut items = Vec::with_capacity(rows.size_hint().0);
        for row in rows {
            let address = std::ptr::from_ref(row) as usize;
            let value = match self.rows.get(&address) {
                Some(value) => value.clone_ref(py),
                None => convert(row)?.unbind(),
            };
            next.insert(address, value.clone_ref(py));
            items.push(value);
        }
        PyList::new(py, items)
    }
}
