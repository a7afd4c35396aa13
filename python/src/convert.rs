//! Python values in (sessions, chunks, options as dicts or JSON text) and
//! the CLI's output out (as Python values).

use agent_context::BuildResult;
use agent_context::command::{Body, Output, Printed};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::errors::{input_error, warn};
use crate::rows::RowCache;
use crate::to_json::to_json;
use crate::to_python::to_python;

/// A `str` argument (`what` names it) as Rust text: another type is a
/// `TypeError`, a lone surrogate (which UTF-8 cannot hold) an `InputError`.
pub fn text_of(value: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    let text = value.cast::<PyString>().map_err(|_| {
        PyTypeError::new_err(format!("{what} must be a str, not {}", type_name(value)))
    })?;
    text.to_cow()
        .map(std::borrow::Cow::into_owned)
        .map_err(|e| input_error(format!("{what} is not valid text: {e}")))
}

/// The name of `value`'s type, for a message.
pub fn type_name(value: &Bound<'_, PyAny>) -> String {
    value.get_type().name().map_or_else(
        |_| "?".to_owned(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// What `os.fspath` gives for a path object (one with `__fspath__`, such
/// as `pathlib.Path`): its str or bytes; `None` for anything else.
pub fn fspath<'py>(value: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    if !value.hasattr("__fspath__")? {
        return Ok(None);
    }
    let os = value.py().import("os")?;
    Ok(Some(os.call_method1("fspath", (value,))?))
}

/// [`text_of`] for an argument that may be left out (or None).
pub fn optional_text(value: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<String>> {
    value
        .filter(|value| !value.is_none())
        .map(|value| text_of(value, what))
        .transpose()
}

/// The JSON text of `value`: a `str` (or UTF-8 `bytes`) as it is, any
/// other value written as JSON (no NaN or infinity: JSON has none).
pub fn json_text(value: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    if value.is_instance_of::<PyString>() {
        return text_of(value, what);
    }
    if let Ok(bytes) = value.cast::<PyBytes>() {
        return String::from_utf8(bytes.as_bytes().to_vec())
            .map_err(|e| input_error(format!("{what} is not UTF-8: {e}")));
    }
    to_json(value, what)
}

/// What a command prints, ready for Python.
pub struct Shaped {
    body: Body,
    warnings: Vec<String>,
    /// `--explain`'s breakdown, for `sys.stderr`.
    explained: Option<String>,
    /// The build and its output, for a session's row cache.
    result: Option<(BuildResult, Output)>,
}

impl Shaped {
    /// Keeps what `printed` says (the build it was made of is let go),
    /// with the breakdown of that build if `explain` (which then holds the
    /// build's own warnings, as the CLI's `--explain` does).
    pub fn of(printed: Printed, explain: bool) -> Shaped {
        let mut shaped = Shaped::with_result(printed, Output::Report, explain);
        shaped.result = None;
        shaped
    }

    /// As [`of`](Self::of), keeping the build of `output` it was made of.
    pub fn with_result(printed: Printed, output: Output, explain: bool) -> Shaped {
        let explained = printed
            .result
            .as_ref()
            .filter(|_| explain)
            .map(BuildResult::explain);
        let shown = if explained.is_some() {
            printed.build_warnings
        } else {
            0
        };
        let mut warnings = printed.warnings;
        warnings.drain(..shown.min(warnings.len()));
        Shaped {
            result: printed.result.map(|result| (result, output)),
            body: printed.body,
            warnings,
            explained,
        }
    }

    /// The value, as `json.loads` reads the CLI's output (but for a
    /// `Decimal` where no float holds a number): a dict for JSON, else a
    /// str; the warnings are issued.
    pub fn into_py(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.into_py_with(py, None)
    }

    /// As [`into_py`](Self::into_py), a report through a session's `rows`
    /// cache (converting only the rows the last report did not have).
    pub fn into_py_with(self, py: Python<'_>, rows: Option<&mut RowCache>) -> PyResult<Py<PyAny>> {
        if let Some(text) = &self.explained {
            py.import("sys")?
                .getattr("stderr")?
                .call_method1("write", (text,))?;
        }
        warn(py, &self.warnings)?;
        let value = match (&self.body, rows, &self.result) {
            (Body::Report(_) | Body::Json(_), Some(rows), Some((result, output)))
                if RowCache::handles(*output) =>
            {
                rows.convert(py, result, *output)?
            }
            // A busy cache: the output the build was asked for, uncached.
            (Body::Report(_), None, Some((result, Output::Openai))) => {
                to_python(py, &agent_context::adapter::openai(result))?
            }
            (Body::Report(result), ..) => to_python(py, result.as_ref())?,
            (Body::Json(value), ..) => to_python(py, value)?,
            (Body::Text(text), ..) => PyString::new(py, text).into_any(),
        };
        Ok(value.unbind())
    }
}
