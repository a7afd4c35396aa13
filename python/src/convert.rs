//! Python values in (sessions, chunks, options as dicts or JSON text) and
//! the CLI's output out (as Python values).

use agent_context::command::Printed;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyString};

use crate::errors::{input_error, warn};

/// `json.dumps` and `json.loads`, imported once.
static JSON: PyOnceLock<(Py<PyAny>, Py<PyAny>)> = PyOnceLock::new();

fn json_functions(py: Python<'_>) -> PyResult<&(Py<PyAny>, Py<PyAny>)> {
    JSON.get_or_try_init(py, || {
        let json = py.import("json")?;
        Ok((
            json.getattr("dumps")?.unbind(),
            json.getattr("loads")?.unbind(),
        ))
    })
}

/// The JSON text of `value`: a `str` (or UTF-8 `bytes`) as it is, any
/// other value through `json.dumps` (no NaN or infinity: JSON has none).
pub fn json_text(value: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    if let Ok(text) = value.cast::<PyString>() {
        return text
            .to_cow()
            .map(std::borrow::Cow::into_owned)
            .map_err(|e| input_error(format!("{what} is not valid text: {e}")));
    }
    if let Ok(bytes) = value.cast::<PyBytes>() {
        return String::from_utf8(bytes.as_bytes().to_vec())
            .map_err(|e| input_error(format!("{what} is not UTF-8: {e}")));
    }
    let py = value.py();
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("ensure_ascii", false)?;
    kwargs.set_item("allow_nan", false)?;
    let dumps = json_functions(py)?.0.bind(py);
    match dumps.call((value,), Some(&kwargs)) {
        Ok(text) => text.extract::<String>(),
        Err(error) if is_value_or_type_error(py, &error) => Err(input_error(format!(
            "{what} cannot be written as JSON: {}",
            error.value(py)
        ))),
        Err(error) => Err(error),
    }
}

fn is_value_or_type_error(py: Python<'_>, error: &PyErr) -> bool {
    error.is_instance_of::<pyo3::exceptions::PyValueError>(py)
        || error.is_instance_of::<pyo3::exceptions::PyTypeError>(py)
        || error.is_instance_of::<pyo3::exceptions::PyRecursionError>(py)
}

/// What a command prints, ready for Python: the JSON body as compact text,
/// or the text body as it is.
pub struct Shaped {
    json: bool,
    text: String,
    warnings: Vec<String>,
}

impl Shaped {
    /// Shapes `printed` (without the GIL: this writes the JSON).
    pub fn of(printed: Printed) -> Shaped {
        match printed.body.to_compact_json() {
            Some(json) => Shaped {
                json: true,
                text: json,
                warnings: printed.warnings,
            },
            None => Shaped {
                json: false,
                text: printed.body.to_pretty(),
                warnings: printed.warnings,
            },
        }
    }

    /// The value: a dict for JSON (read by `json.loads`), else a str; the
    /// warnings are issued.
    pub fn into_py(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        warn(py, &self.warnings)?;
        if self.json {
            loads(py, &self.text)
        } else {
            Ok(PyString::new(py, &self.text).into_any().unbind())
        }
    }
}

/// `json.loads(text)`.
pub fn loads(py: Python<'_>, text: &str) -> PyResult<Py<PyAny>> {
    let loads = json_functions(py)?.1.bind(py);
    Ok(loads.call1((text,))?.unbind())
}
