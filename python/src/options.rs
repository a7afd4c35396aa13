//! Keyword arguments read into the library's options, under the CLI
//! flags' names and with their defaults (`max_tokens` is `--max-tokens`).

use agent_context::budget::CompactAt;
use agent_context::command::{
    self, BuildOptions, InputFormat, Output, parse_cap, parse_content_format, parse_escape,
    parse_estimate_factor, parse_fragment_format, parse_framing, parse_kind, parse_threads,
};
use agent_context::compaction::{CompactionOptions, RequestFormat};
use agent_context::{BuildResult, ParseOptions};
use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyString};

use crate::convert::{fspath, json_text, optional_text, text_of, type_name};
use crate::errors::{detached, input_error, to_py};

/// A build's keywords: the library's options, and the flags of the
/// command itself (`--explain`, `--max-input-bytes`).
#[derive(Debug, Clone, Default)]
pub struct Call {
    pub options: BuildOptions,
    /// `--explain`: the breakdown of every decision, on `sys.stderr`.
    pub explain: bool,
    /// `--max-input-bytes`: the most bytes of session JSON read.
    pub max_input_bytes: Option<usize>,
    /// `--input`: what the session holds (`"ai-sdk"`: the AI SDK's messages).
    pub input: InputFormat,
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
pub const BUILD_KEYWORDS: [&str; 21] = [
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
    "compact_at",
    "exclude_kinds",
    "estimate_factor",
    "threads",
    "output",
    "explain",
    "cache_control",
    "no_cache_control",
    "max_input_bytes",
    "input",
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
            "input" if value.is_none() => call.input = InputFormat::Session,
            "input" => call.input = named(&value, &key, InputFormat::from_name)?,
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
        "compact_at" => options.compact_at = Some(compact_at(value)?),
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
        "compact_at" => options.compact_at = None,
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
    // `previous` is one build's, not a setting a builder keeps.
    let hint = match key {
        "previous" => "; previous is an argument of a single build: give it to build()",
        _ => "",
    };
    PyTypeError::new_err(format!(
        "{function}() got an unexpected keyword argument {key:?}; the build keywords are: {}{hint}",
        BUILD_KEYWORDS.join(", ")
    ))
}

/// `previous` (`--previous REPORT`): the report of the previous build of
/// the same session, as a dict (what a build returns with output
/// `report`) or its JSON text (a str or UTF-8 bytes), read back as
/// [`BuildResult::from_report`] reads the CLI's file; `None` is no
/// previous build. A value of another type is a `TypeError`, a dict or
/// text that is no report an `InputError` naming `previous`.
pub fn previous_build(
    py: Python<'_>,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<BuildResult>> {
    let key = "previous";
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if !(value.is_instance_of::<PyDict>()
        || value.is_instance_of::<PyString>()
        || value.is_instance_of::<PyBytes>())
    {
        return Err(PyTypeError::new_err(format!(
            "{key} must be a dict (a build's report) or its JSON text, not {}",
            type_name(value)
        )));
    }
    let text = json_text(value, key)?;
    detached(py, || BuildResult::from_report(&text, key)).map(Some)
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

/// `compact_at`: an int is a number of tokens, a float a fraction of the
/// budget (above 0; above 1 once the history outgrows the budget), as
/// `--compact-at 100000` and `--compact-at 0.75` are. A bool or a value of
/// another type is a `TypeError`.
fn compact_at(value: &Bound<'_, PyAny>) -> PyResult<CompactAt> {
    let key = "compact_at";
    let wrong_type = || {
        PyTypeError::new_err(format!(
            "{key} must be an int (tokens) or a float (a fraction of the budget), not {}",
            type_name(value)
        ))
    };
    if value.is_instance_of::<PyBool>() || value.is_instance_of::<PyString>() {
        return Err(wrong_type());
    }
    if value.hasattr("__index__")? {
        let n = value.call_method0("__index__")?;
        if n.lt(0)? {
            return Err(option_error(
                key,
                format!(
                    "{n} is not a number of tokens (0 or more); give tokens as an int (100000) \
                     or a fraction of the budget as a float (0.75)"
                ),
            ));
        }
        return match n.extract::<usize>() {
            Ok(tokens) => Ok(CompactAt::Tokens(tokens)),
            Err(error) if error.is_instance_of::<PyOverflowError>(n.py()) => Err(option_error(
                key,
                format!("{n} is too large; the largest is {}", usize::MAX),
            )),
            Err(error) => Err(error),
        };
    }
    let fraction = value.extract::<f64>().map_err(|_| wrong_type())?;
    if fraction.is_finite() && fraction > 0.0 {
        return Ok(CompactAt::Fraction(fraction));
    }
    Err(option_error(
        key,
        format!(
            "{} is not a positive fraction of the budget; give a float above 0 (0.75), or \
             tokens as an int (100000)",
            value.str()?
        ),
    ))
}

/// The keywords of a compaction plan, beside the build keywords:
/// `chat compact --plan`'s own flags (`output` is the request's shape).
pub const COMPACTION_KEYWORDS: [&str; 6] = [
    "keep_tokens",
    "summarizer_model",
    "summarizer_max_tokens",
    "summary_tokens",
    "instructions",
    "output",
];

/// Build keywords a compaction takes no part of: it prints no build, and
/// counts under the settings `chat compact` does (a report's).
const NOT_COMPACTION: [&str; 5] = [
    "output",
    "explain",
    "cache_control",
    "no_cache_control",
    "input",
];

/// The compaction keywords of `kwargs` read into options, and the
/// keywords left: the build's, for [`compaction_build_options`].
pub fn compaction_options<'py>(
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<(CompactionOptions, Option<Bound<'py, PyDict>>)> {
    let mut options = CompactionOptions::default();
    let Some(kwargs) = kwargs else {
        return Ok((options, None));
    };
    let rest = kwargs.copy()?;
    let take = |key: &str| -> PyResult<Option<Bound<'py, PyAny>>> {
        let value = rest.get_item(key)?;
        if value.is_some() {
            rest.del_item(key)?;
        }
        Ok(value.filter(|v| !v.is_none()))
    };
    let count = |value: Option<Bound<'_, PyAny>>, key: &str| match value {
        Some(value) => count_or_none(&value, key),
        None => Ok(None),
    };
    options.keep_tokens = count(take("keep_tokens")?, "keep_tokens")?;
    options.summarizer_model =
        optional_text(take("summarizer_model")?.as_ref(), "summarizer_model")?;
    options.summarizer_max_tokens = count(take("summarizer_max_tokens")?, "summarizer_max_tokens")?;
    options.summary_tokens = count(take("summary_tokens")?, "summary_tokens")?;
    options.instructions = optional_text(take("instructions")?.as_ref(), "instructions")?;
    if let Some(name) = optional_text(take("output")?.as_ref(), "output")? {
        options.request_format =
            RequestFormat::parse(&name).map_err(|m| option_error("output", m))?;
    }
    Ok((options, Some(rest)))
}

/// The build settings of a compaction's `kwargs` (the build keywords but
/// those of [`NOT_COMPACTION`]), with `output` left a report's as `chat
/// compact` leaves it; any other keyword is a `TypeError` naming those
/// `function` takes (`own`, its keywords beside the build's).
pub fn compaction_build_options(
    kwargs: Option<&Bound<'_, PyDict>>,
    function: &str,
    own: &[&str],
) -> PyResult<Call> {
    let Some(kwargs) = kwargs else {
        return Ok(Call::default());
    };
    let taken: Vec<&str> = BUILD_KEYWORDS
        .iter()
        .copied()
        .filter(|k| !NOT_COMPACTION.contains(k))
        .collect();
    for key in kwargs.keys() {
        let name = text_of(&key, "a keyword").unwrap_or_default();
        let aliases = ["cap", "exclude_kind"];
        if !taken.contains(&name.as_str()) && !aliases.contains(&name.as_str()) {
            let mut keywords: Vec<&str> = own.to_vec();
            keywords.extend(&taken);
            return Err(PyTypeError::new_err(format!(
                "{function}() got an unexpected keyword argument {:?}; it takes: {}",
                key.to_string(),
                keywords.join(", ")
            )));
        }
    }
    build_options(&Call::default(), Some(kwargs), function)
}

/// A `TypeError` for the first of the keywords `rest` holds: `function`
/// takes only `takes`.
pub fn no_more_keywords(
    rest: Option<Bound<'_, PyDict>>,
    function: &str,
    takes: &[&str],
) -> PyResult<()> {
    match rest.and_then(|rest| rest.keys().iter().next()) {
        Some(key) => Err(PyTypeError::new_err(format!(
            "{function}() got an unexpected keyword argument {:?}; it takes: {}",
            key.to_string(),
            takes.join(", ")
        ))),
        None => Ok(()),
    }
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
