//! `ContextBuilder`: build settings kept for many builds and sessions.

use agent_context::MemoryState;
use agent_context::command::{self, BuildOptions};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{Shaped, json_text, optional_text};
use crate::errors::detached;
use crate::options::{Call, build_options, parse_options};

/// Build settings: the keywords of `build` (the CLI's flags), checked
/// once and kept. `build(session)` builds with them; `Session(builder)`
/// builds turn after turn.
///
/// Immutable once made, so it can be shared between threads;
/// `with_options(**kwargs)` gives a copy with some settings changed.
#[pyclass(module = "agent_context", frozen)]
pub struct ContextBuilder {
    pub(crate) call: Call,
}

#[pymethods]
impl ContextBuilder {
    #[new]
    #[pyo3(signature = (**kwargs), text_signature = "(*, model='gpt-4o', max_tokens=None, reserve=None, escape='structural', framing='openai', content_format='gfm', fragments_format='xml', group_fragments=False, caps=None, low_water=0.8, context_management=None, exclude_kinds=None, estimate_factor=None, threads=None, output='report', explain=False, cache_control=True, max_input_bytes=None)")]
    fn new(py: Python<'_>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let call = build_options(&Call::default(), kwargs, "ContextBuilder")?;
        // Settings are checked here, as the CLI checks its flags before
        // reading the input.
        let checked = call.options.clone();
        detached(py, move || checked.builder().map(drop))?;
        Ok(ContextBuilder { call })
    }

    /// A copy of this builder with the given keywords changed.
    #[pyo3(signature = (**kwargs))]
    fn with_options(&self, py: Python<'_>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let call = build_options(&self.call, kwargs, "with_options")?;
        let checked = call.options.clone();
        detached(py, move || checked.builder().map(drop))?;
        Ok(ContextBuilder { call })
    }

    /// Builds `session` (a dict or JSON string) with these settings, as
    /// `agent_context.build` does; `output` overrides the builder's.
    #[pyo3(signature = (session, *, output = None, lossy_unicode = false))]
    fn build(
        &self,
        py: Python<'_>,
        session: &Bound<'_, PyAny>,
        output: Option<&Bound<'_, PyAny>>,
        lossy_unicode: bool,
    ) -> PyResult<Py<PyAny>> {
        let output = optional_text(output, "output")?;
        let options = with_output(&self.call.options, output.as_deref())?;
        let text = json_text(session, "session")?;
        self.call.check_size(&text)?;
        let explain = self.call.explain;
        let shaped = detached(py, || {
            let state = MemoryState::from_json_str_with(&text, parse_options(lossy_unicode))?;
            let printed = command::build(&state, &options)?;
            Ok(Shaped::of(printed, explain))
        })?;
        shaped.into_py(py)
    }

    /// The settings, as keywords.
    fn options(&self, py: Python<'_>) -> PyResult<Py<PyDict>> {
        let o = &self.call.options;
        let dict = PyDict::new(py);
        dict.set_item("model", &o.model)?;
        dict.set_item("max_tokens", o.max_tokens)?;
        dict.set_item("reserve", o.reserve_output)?;
        dict.set_item("low_water", o.low_water)?;
        dict.set_item("caps", o.caps.clone())?;
        dict.set_item(
            "exclude_kinds",
            o.exclude_kinds
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>(),
        )?;
        dict.set_item("estimate_factor", o.estimate_factor.map(|f| f.to_string()))?;
        dict.set_item("threads", o.threads)?;
        dict.set_item("output", o.output.as_str())?;
        dict.set_item("cache_control", o.cache_control)?;
        dict.set_item("explain", self.call.explain)?;
        dict.set_item("max_input_bytes", self.call.max_input_bytes)?;
        Ok(dict.unbind())
    }

    fn __repr__(&self) -> String {
        let o = &self.call.options;
        format!(
            "ContextBuilder(model={:?}, max_tokens={}, reserve={}, output={:?})",
            o.model,
            o.max_tokens.map_or("None".into(), |n| n.to_string()),
            o.reserve_output.map_or("None".into(), |n| n.to_string()),
            o.output.as_str()
        )
    }
}

/// `options` with `output` (a name) in place of its own.
pub fn with_output(options: &BuildOptions, output: Option<&str>) -> PyResult<BuildOptions> {
    let mut options = options.clone();
    if let Some(name) = output {
        options.output = command::Output::from_name(name)
            .map_err(|m| crate::options::option_error("output", m))?;
    }
    Ok(options)
}
