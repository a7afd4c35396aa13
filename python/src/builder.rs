//! `ContextBuilder`: build settings kept for many builds and sessions.

use agent_context::ContextConfig;
use agent_context::budget::CompactAt;
use agent_context::command::{self, BuildOptions};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{Shaped, json_text, optional_text};
use crate::errors::{self, detached};
use crate::options::{BUILD_KEYWORDS, Call, build_options, parse_options, previous_build};
use crate::to_python::to_python;

/// Build settings: the keywords of `build` (the CLI's flags), checked
/// once and kept. `build(session)` builds with them; `Session(builder)`
/// builds turn after turn.
///
/// Immutable once made, so it can be shared between threads;
/// `with_options(**kwargs)` gives a copy with some settings changed.
#[pyclass(module = "agent_context", frozen)]
pub struct ContextBuilder {
    pub(crate) call: Call,
    /// The settings compiled once, for every `build`.
    config: ContextConfig,
}

#[pymethods]
impl ContextBuilder {
    #[new]
    #[pyo3(signature = (**kwargs), text_signature = "(*, model='gpt-4o', max_tokens=None, reserve=None, escape='structural', framing='openai', content_format='gfm', fragments_format='xml', group_fragments=False, caps=None, low_water=0.8, context_management=None, compact_at=None, exclude_kinds=None, estimate_factor=None, threads=None, output='report', explain=False, cache_control=True, max_input_bytes=None, input='session')")]
    fn new(py: Python<'_>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let call = build_options(&Call::default(), kwargs, "ContextBuilder")?;
        ContextBuilder::compiled(py, call)
    }

    /// A copy of this builder with the given keywords changed.
    #[pyo3(signature = (**kwargs))]
    fn with_options(&self, py: Python<'_>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let call = build_options(&self.call, kwargs, "with_options")?;
        ContextBuilder::compiled(py, call)
    }

    /// Builds `session` (a dict or JSON string) with these settings, as
    /// `agent_context.build` does; `output` overrides the builder's, and
    /// `previous` is `build`'s: the report of the session's previous build.
    #[pyo3(signature = (session, *, output = None, lossy_unicode = false, previous = None))]
    fn build(
        &self,
        py: Python<'_>,
        session: &Bound<'_, PyAny>,
        output: Option<&Bound<'_, PyAny>>,
        lossy_unicode: bool,
        previous: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let output = optional_text(output, "output")?;
        let mut options = with_output(&self.call.options, output.as_deref())?;
        options.previous = previous_build(py, previous)?;
        // Another output may change the settings (Anthropic's reserve,
        // native tool calls), and a previous build is the builder's to
        // keep: those compile for this build.
        let same = options.output == self.call.options.output && options.previous.is_none();
        let text = json_text(session, "session")?;
        self.call.check_size(&text)?;
        let explain = self.call.explain;
        let config = &self.config;
        let input = self.call.input;
        let (shaped, read) = detached(py, || {
            let (state, read) = command::read_session(&text, input, parse_options(lossy_unicode))?;
            let printed = match same {
                true => command::build_compiled(&state, config, &options)?,
                false => command::build(&state, &options)?,
            };
            Ok((Shaped::of(printed, explain), read))
        })?;
        errors::warn(py, &read)?;
        shaped.into_py(py)
    }

    /// The settings, as keywords: every build keyword but
    /// `no_cache_control` (the negation of `cache_control`), in the order
    /// `--help` lists the flags, each as a value the keyword takes back.
    fn options(&self, py: Python<'_>) -> PyResult<Py<PyDict>> {
        let dict = PyDict::new(py);
        for key in BUILD_KEYWORDS.iter().filter(|k| **k != "no_cache_control") {
            dict.set_item(*key, keyword_value(py, &self.call, key)?)?;
        }
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

impl ContextBuilder {
    /// A builder of `call`'s settings, compiled (and so checked) here, as
    /// the CLI checks its flags before reading the input.
    fn compiled(py: Python<'_>, call: Call) -> PyResult<Self> {
        let options = call.options.clone();
        let config = detached(py, move || options.builder()?.compile())?;
        Ok(ContextBuilder { call, config })
    }
}

/// The value of build keyword `key` in `call`, as the keyword takes it.
fn keyword_value<'py>(py: Python<'py>, call: &Call, key: &str) -> PyResult<Bound<'py, PyAny>> {
    let o = &call.options;
    let value = match key {
        "model" => o.model.as_str().into_pyobject(py)?.into_any(),
        "max_tokens" => o.max_tokens.into_pyobject(py)?,
        "reserve" => o.reserve_output.into_pyobject(py)?,
        "escape" => o.escape.as_str().into_pyobject(py)?.into_any(),
        "framing" => o.framing.as_str().into_pyobject(py)?.into_any(),
        "content_format" => o.content_format.name().into_pyobject(py)?.into_any(),
        "fragments_format" => o.fragments_format.as_str().into_pyobject(py)?.into_any(),
        "group_fragments" => o.group_fragments.into_pyobject(py)?.to_owned().into_any(),
        "caps" => {
            let caps = PyDict::new(py);
            for (name, tokens) in &o.caps {
                caps.set_item(name, tokens)?;
            }
            caps.into_any()
        }
        "low_water" => o.low_water.into_pyobject(py)?.into_any(),
        "context_management" => match &o.context_management {
            Some(management) => to_python(py, management)?,
            None => py.None().into_bound(py),
        },
        "compact_at" => match o.compact_at {
            Some(CompactAt::Tokens(tokens)) => tokens.into_pyobject(py)?.into_any(),
            Some(CompactAt::Fraction(fraction)) => fraction.into_pyobject(py)?.into_any(),
            None => py.None().into_bound(py),
        },
        "exclude_kinds" => {
            let kinds: Vec<&str> = o.exclude_kinds.iter().map(|k| k.as_str()).collect();
            kinds.into_pyobject(py)?
        }
        "estimate_factor" => o.estimate_factor.map(|f| f.to_string()).into_pyobject(py)?,
        "threads" => o.threads.into_pyobject(py)?,
        "output" => o.output.as_str().into_pyobject(py)?.into_any(),
        "explain" => call.explain.into_pyobject(py)?.to_owned().into_any(),
        "cache_control" => o.cache_control.into_pyobject(py)?.to_owned().into_any(),
        "max_input_bytes" => call.max_input_bytes.into_pyobject(py)?,
        "input" => call.input.as_str().into_pyobject(py)?.into_any(),
        _ => py.None().into_bound(py),
    };
    Ok(value)
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
