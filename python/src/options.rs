//! Keyword arguments read into the library's options, under the CLI
//! flags' names and with their defaults (`max_tokens` is `--max-tokens`).

use agent_context::ParseOptions;
use agent_context::command::{
    self, BuildOptions, Output, parse_cap, parse_content_format, parse_escape,
    parse_estimate_factor, parse_fragment_format, parse_framing, parse_kind, parse_threads,
};
use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyString};

use crate::convert::{fspath, json_text, text_of, type_name};
use crate::errors::{input_error, to_py};

/// A build's keywords: the library's options, and the flags of the
/// command itself (`--explain`, `--max-input-bytes`).
#[derive(Debug, Clone, Default)]
pub struct Call {
    pub options: BuildOptions,
    /// `--explain`: the breakdown of every decision, on `sys.stderr`.
    pub explain: bool,
    /// `--max-input-bytes`: the most bytes of session JSON read.
    pub max_input_bytes: Option<usize>,
}

impl Call {
    /// Refuses JSON text longer than `max_input_bytes`, as the CLI
    /// refuses a larger file.
    pub fn check_size(&self, text: &str) -> PyResult<()> {
        match self.max_input_bytes {
            Some(limit) if text.len() > limit => Err(input_error(format!(
                "the input is larger than the limit of {limit} bytes; raise it with \
                 max_input_bytes"
            ))),
            _ => Ok(()),
        }
    }
}

/// The keywords of a build, in the order `--help` lists the flags.
pub const BUILD_KEYWORDS: [&str; 19] = [
    "model",
    "max_tokens",
    "reserve",
    "escape",
    "framing",
    "content_format",
    "fragments_format",
    "group_fragments",
    "caps",
    "low_water",
    "context_management",
    "exclude_kinds",
    "estimate_factor",
    "threads",
    "output",
    "explain",
    "cache_control",
    "no_cache_control",
    "max_input_bytes",
];

/// `base` with the build keywords of `kwargs` applied; any other keyword
/// is a `TypeError`, as Python gives for a function's.
pub fn build_options(
    base: &Call,
    kwargs: Option<&Bound<'_, PyDict>>,
    function: &str,
) -> PyResult<Call> {
    let mut call = base.clone();
    let Some(kwargs) = kwargs else {
        return Ok(call);
    };
    for (key, value) in kwargs.iter() {
        // A name UTF-8 cannot hold is no keyword of ours.
        let key = text_of(&key, "a keyword").map_err(|_| unexpected(function, &key.to_string()))?;
        match key.as_str() {
            "explain" => call.explain = bool_of(&value, &key)?,
            "no_cache_control" => call.options.cache_control = !bool_of(&value, &key)?,
            "max_input_bytes" => {
                call.max_input_bytes = count_or_none(&value, &key)?;
                if call.max_input_bytes == Some(0) {
                    // As the CLI refuses `--max-input-bytes 0`.
                    return Err(option_error(
                        &key,
                        "expected a size of at least one byte; found 0".into(),
                    ));
                }
            }
            // None is the flag left out: the default.
            _ if value.is_none() && !matches!(key.as_str(), "max_tokens" | "reserve") => {
                set_default(&mut call.options, &key, function)?;
            }
            _ => set(&mut call.options, &key, &value, function)?,
        }
    }
    Ok(call)
}

fn set(
    options: &mut BuildOptions,
    key: &str,
    value: &Bound<'_, PyAny>,
    function: &str,
) -> PyResult<()> {
    match key {
        "model" => options.model = text_of(value, key)?,
        "max_tokens" => options.max_tokens = count_or_none(value, key)?,
        "reserve" => options.reserve_output = count_or_none(value, key)?,
        "escape" => options.escape = named(value, key, parse_escape)?,
        "framing" => options.framing = named(value, key, parse_framing)?,
        "content_format" => options.content_format = named(value, key, parse_content_format)?,
        "fragments_format" => {
            options.fragments_format = named(value, key, parse_fragment_format)?;
        }
        "group_fragments" => options.group_fragments = bool_of(value, key)?,
        // `--cap`, repeatable, is `caps`; `--exclude-kind` is `exclude_kinds`.
        "caps" | "cap" => options.caps = caps(value)?,
        "low_water" => options.low_water = fraction_of(value, key)?,
        "context_management" => {
            let text = context_management(value)?;
            options.context_management =
                Some(command::read_context_management(&text).map_err(to_py)?);
        }
        "exclude_kinds" | "exclude_kind" => options.exclude_kinds = kinds(value)?,
        "estimate_factor" => {
            if value.is_instance_of::<PyBool>() {
                return Err(PyTypeError::new_err(format!(
                    "{key} must be a float or its text, not bool"
                )));
            }
            let text = text_of(value.str()?.as_any(), key)?;
            options.estimate_factor =
                Some(parse_estimate_factor(&text).map_err(|m| option_error(key, m))?);
        }
        "threads" => {
            let threads = int_text(value, key)?;
            options.threads = Some(parse_threads(&threads).map_err(|m| option_error(key, m))?);
        }
        "output" => options.output = named(value, key, Output::from_name)?,
        "cache_control" => options.cache_control = bool_of(value, key)?,
        _ => return Err(unexpected(function, key)),
    }
    Ok(())
}

/// Sets `key` back to its default (the keyword given as `None`).
fn set_default(options: &mut BuildOptions, key: &str, function: &str) -> PyResult<()> {
    let default = BuildOptions::default();
    match key {
        "model" => options.model = default.model,
        "escape" => options.escape = default.escape,
        "framing" => options.framing = default.framing,
        "content_format" => options.content_format = default.content_format,
        "fragments_format" => options.fragments_format = default.fragments_format,
        "group_fragments" => options.group_fragments = default.group_fragments,
        "caps" | "cap" => options.caps = default.caps,
        "low_water" => options.low_water = default.low_water,
        "context_management" => options.context_management = None,
        "exclude_kinds" | "exclude_kind" => options.exclude_kinds = default.exclude_kinds,
        "estimate_factor" => options.estimate_factor = None,
        "threads" => options.threads = None,
        "output" => options.output = default.output,
        "cache_control" => options.cache_control = default.cache_control,
        _ => return Err(unexpected(function, key)),
    }
    Ok(())
}

fn unexpected(function: &str, key: &str) -> PyErr {
    PyTypeError::new_err(format!(
        "{function}() got an unexpected keyword argument {key:?}; the build keywords are: {}",
        BUILD_KEYWORDS.join(", ")
    ))
}

/// The `InputError` of a keyword's value, as the CLI words its flag's.
pub fn option_error(key: &str, message: String) -> PyErr {
    input_error(format!("invalid value for {key}: {message}"))
}

fn named<T>(
    value: &Bound<'_, PyAny>,
    key: &str,
    parse: impl Fn(&str) -> Result<T, String>,
) -> PyResult<T> {
    let name = text_of(value, key)?;
    parse(&name).map_err(|m| option_error(key, m))
}

/// A token count: an int of at least 0, or None.
fn count_or_none(value: &Bound<'_, PyAny>, key: &str) -> PyResult<Option<usize>> {
    if value.is_none() {
        return Ok(None);
    }
    let n = int_of(value, key)?.call_method0("__index__")?;
    if n.lt(0)? {
        let what = if key == "max_input_bytes" {
            "bytes"
        } else {
            "tokens"
        };
        return Err(option_error(
            key,
            format!("{n} is not a number of {what} (0 or more)"),
        ));
    }
    match n.extract::<usize>() {
        Ok(n) => Ok(Some(n)),
        Err(error) if error.is_instance_of::<PyOverflowError>(n.py()) => Err(option_error(
            key,
            format!("{n} is too large; the largest is {}", usize::MAX),
        )),
        Err(error) => Err(error),
    }
}

/// `value` if it is an int (or has `__index__`), but not a bool: Python
/// takes no bool for a count. Another type is a `TypeError`, as Python
/// gives for an argument of the wrong type.
fn int_of<'a, 'py>(value: &'a Bound<'py, PyAny>, key: &str) -> PyResult<&'a Bound<'py, PyAny>> {
    if !value.is_instance_of::<PyBool>() && value.hasattr("__index__")? {
        return Ok(value);
    }
    Err(PyTypeError::new_err(format!(
        "{key} must be an int, not {}",
        type_name(value)
    )))
}

/// `value` if it is a bool; another type is a `TypeError` naming `key`
/// (a truthy str such as `"no"` must not read as `True`).
fn bool_of(value: &Bound<'_, PyAny>, key: &str) -> PyResult<bool> {
    match value.cast::<PyBool>() {
        Ok(flag) => Ok(flag.is_true()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{key} must be a bool, not {}",
            type_name(value)
        ))),
    }
}

/// `value` as a float if it is a float or an int, but not a bool (Python
/// takes no bool for a number); another type is a `TypeError` naming `key`.
fn fraction_of(value: &Bound<'_, PyAny>, key: &str) -> PyResult<f64> {
    match value.extract::<f64>() {
        Ok(fraction) if !value.is_instance_of::<PyBool>() => Ok(fraction),
        _ => Err(PyTypeError::new_err(format!(
            "{key} must be a float, not {}",
            type_name(value)
        ))),
    }
}

/// The digits of an int (not a bool), for the CLI's parsers to read.
fn int_text(value: &Bound<'_, PyAny>, key: &str) -> PyResult<String> {
    let n = int_of(value, key)?.call_method0("__index__")?;
    Ok(n.str()?.to_string())
}

/// `context_management`: a dict (Anthropic's object), a str (its JSON or a
/// file path), bytes, or an `os.PathLike` (a file path); another type is a
/// `TypeError`.
fn context_management(value: &Bound<'_, PyAny>) -> PyResult<String> {
    let key = "context_management";
    if value.is_instance_of::<PyDict>()
        || value.is_instance_of::<PyString>()
        || value.is_instance_of::<PyBytes>()
    {
        return json_text(value, key);
    }
    if let Some(path) = fspath(value)? {
        return json_text(&path, key);
    }
    Err(PyTypeError::new_err(format!(
        "{key} must be a dict, a str (JSON or a file path), bytes or an os.PathLike, not {}",
        type_name(value)
    )))
}

/// `{"tool_result": 2000, "tool:bash": None}`, or `["tool_result=2000", …]`.
fn caps(value: &Bound<'_, PyAny>) -> PyResult<Vec<(String, Option<usize>)>> {
    if let Ok(dict) = value.cast::<PyDict>() {
        return dict
            .iter()
            .map(|(name, cap)| {
                let name = text_of(&name, "a key of caps")?;
                let what = format!("caps[{name:?}]");
                let text = if cap.is_none() {
                    "none".to_owned()
                } else if cap.is_instance_of::<PyString>() {
                    text_of(&cap, &what)?
                } else {
                    int_text(&cap, &what)?
                };
                parse_cap(&format!("{name}={text}")).map_err(|m| option_error("caps", m))
            })
            .collect();
    }
    if value.is_instance_of::<PyString>() {
        return Err(option_error(
            "caps",
            "give a dict {name: tokens} or a list of \"NAME=N\"".into(),
        ));
    }
    iter_of(
        value,
        "caps",
        "a dict {name: tokens} or a list of \"NAME=N\"",
    )?
    .map(|item| {
        let text = text_of(&item?, "an item of caps")?;
        parse_cap(&text).map_err(|m| option_error("caps", m))
    })
    .collect()
}

/// A list of kind names (or one name).
fn kinds(value: &Bound<'_, PyAny>) -> PyResult<Vec<agent_context::ChunkKind>> {
    if value.is_instance_of::<PyString>() {
        let name = text_of(value, "exclude_kinds")?;
        return Ok(vec![
            parse_kind(&name).map_err(|m| option_error("exclude_kinds", m))?,
        ]);
    }
    iter_of(value, "exclude_kinds", "a kind's name or a list of them")?
        .map(|item| {
            let name = text_of(&item?, "an item of exclude_kinds")?;
            parse_kind(&name).map_err(|m| option_error("exclude_kinds", m))
        })
        .collect()
}

/// The items of `value`; one that cannot be iterated is a `TypeError`
/// naming `key` and what it takes (`expected`).
fn iter_of<'py>(
    value: &Bound<'py, PyAny>,
    key: &str,
    expected: &str,
) -> PyResult<Bound<'py, pyo3::types::PyIterator>> {
    value.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "{key} must be {expected}, not {}",
            type_name(value)
        ))
    })
}

/// `lossy_unicode`'s reading of JSON input.
pub fn parse_options(lossy_unicode: bool) -> ParseOptions {
    ParseOptions::new().lossy_unicode(lossy_unicode)
}
