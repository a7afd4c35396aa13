//! Python values written as JSON text, as `json.dumps(value,
//! ensure_ascii=False, allow_nan=False)` writes them, and more: a
//! `decimal.Decimal` is written as its digits, so that a number a float
//! cannot hold goes back with every digit, and a lone surrogate in a str as
//! its `\udXXX` escape, which the parser names (or, lossy, reads as
//! U+FFFD).
//!
//! As `json.dumps`: dict keys that are str, int, float, bool or None (the
//! others refused), tuples as lists, subclasses of dict, list, tuple, str,
//! int and float as their base type's value, `", "` and `": "` between
//! items, and the dict's own order of keys.

use std::fmt::Write;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::convert::{text_of, type_name};
use crate::errors::input_error;
use crate::to_python::decimal_class;

/// The deepest nesting written: one level past what the parser reads, so
/// that the parser names the place of any nesting it refuses, while a
/// value that contains itself stops here.
const MAX_DEPTH: usize = agent_context::command::MAX_JSON_DEPTH + 1;

/// The JSON text of `value`; what no JSON holds (an object of another
/// type, NaN or infinity, a dict that contains itself) is an `InputError`
/// saying `what` cannot be written.
pub fn to_json(value: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    let mut writer = Writer {
        out: String::with_capacity(256),
        open: Vec::new(),
    };
    match writer.value(value) {
        Ok(()) => Ok(writer.out),
        Err(Fault::Invalid(message)) => Err(input_error(format!(
            "{what} cannot be written as JSON: {message}"
        ))),
        Err(Fault::Python(error)) => Err(error),
    }
}

/// Why a value was not written.
enum Fault {
    /// The value has no JSON: the reason.
    Invalid(String),
    /// Python raised (a dict subclass's `items()`, say).
    Python(PyErr),
}

impl From<PyErr> for Fault {
    fn from(error: PyErr) -> Self {
        Fault::Python(error)
    }
}

type Written = Result<(), Fault>;

struct Writer {
    out: String,
    /// The addresses of the lists and dicts being written, outermost first.
    open: Vec<usize>,
}

impl Writer {
    /// Tests in `json.dumps`'s order: bool before int (a bool is an int).
    fn value(&mut self, value: &Bound<'_, PyAny>) -> Written {
        if let Ok(text) = value.cast::<PyString>() {
            return self.string(text);
        }
        if value.is_none() {
            self.out.push_str("null");
        } else if let Ok(flag) = value.cast::<PyBool>() {
            self.out
                .push_str(if flag.is_true() { "true" } else { "false" });
        } else if let Ok(int) = value.cast::<PyInt>() {
            self.int(int)?;
        } else if let Ok(float) = value.cast::<PyFloat>() {
            self.float(float.value(), value)?;
        } else if let Ok(list) = value.cast_exact::<PyList>() {
            self.nested(value, |writer| writer.items(list.iter()))?;
        } else if let Ok(tuple) = value.cast_exact::<PyTuple>() {
            self.nested(value, |writer| writer.items(tuple.iter()))?;
        } else if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
            // A subclass is read as `list(value)` is, through its `__iter__`.
            self.nested(value, |writer| {
                let items = value.try_iter()?.collect::<PyResult<Vec<_>>>()?;
                writer.items(items.into_iter())
            })?;
        } else if let Ok(dict) = value.cast_exact::<PyDict>() {
            self.nested(value, |writer| writer.entries(dict.iter()))?;
        } else if value.is_instance_of::<PyDict>() {
            // A subclass gives its entries through `items()`, as to `json.dumps`.
            self.nested(value, |writer| {
                let entries = value
                    .call_method0("items")?
                    .try_iter()?
                    .map(|item| pair(&item?))
                    .collect::<Result<Vec<_>, Fault>>()?;
                writer.entries(entries.into_iter())
            })?;
        } else {
            self.other(value)?;
        }
        Ok(())
    }

    /// Writes the list or dict `value` with `write`, entered (see
    /// [`open`](Writer::open)) while it is written.
    fn nested(
        &mut self,
        value: &Bound<'_, PyAny>,
        write: impl FnOnce(&mut Self) -> Written,
    ) -> Written {
        self.open(value)?;
        write(self)?;
        self.open.pop();
        Ok(())
    }

    /// Enters a list or dict, refusing nesting past [`MAX_DEPTH`].
    fn open(&mut self, value: &Bound<'_, PyAny>) -> Written {
        let address = value.as_ptr() as usize;
        if self.open.len() >= MAX_DEPTH {
            return Err(Fault::Invalid(if self.open.contains(&address) {
                "it contains itself (a circular reference)".to_owned()
            } else {
                format!(
                    "it nests deeper than {} levels of lists and dicts, the most a session \
                     holds; flatten the value",
                    agent_context::command::MAX_JSON_DEPTH
                )
            }));
        }
        self.open.push(address);
        Ok(())
    }

    fn items<'py>(&mut self, items: impl Iterator<Item = Bound<'py, PyAny>>) -> Written {
        self.out.push('[');
        for (index, item) in items.enumerate() {
            if index > 0 {
                self.out.push_str(", ");
            }
            self.value(&item)?;
        }
        self.out.push(']');
        Ok(())
    }

    fn entries<'py>(
        &mut self,
        entries: impl Iterator<Item = (Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    ) -> Written {
        self.out.push('{');
        for (index, (key, value)) in entries.enumerate() {
            if index > 0 {
                self.out.push_str(", ");
            }
            self.key(&key)?;
            self.out.push_str(": ");
            self.value(&value)?;
        }
        self.out.push('}');
        Ok(())
    }

    /// A key as `json.dumps` writes it: a str as it is; a float, bool,
    /// None or int as the string of its JSON.
    fn key(&mut self, key: &Bound<'_, PyAny>) -> Written {
        if let Ok(text) = key.cast::<PyString>() {
            return self.string(text);
        }
        let scalar = key.is_none()
            || key.is_instance_of::<PyBool>()
            || key.is_instance_of::<PyInt>()
            || key.is_instance_of::<PyFloat>();
        if !scalar {
            return Err(Fault::Invalid(format!(
                "keys must be str, int, float, bool or None, not {}",
                type_name(key)
            )));
        }
        self.out.push('"');
        self.value(key)?;
        self.out.push('"');
        Ok(())
    }

    /// An int's digits (a subclass's value, as `int.__repr__` gives it).
    fn int(&mut self, int: &Bound<'_, PyInt>) -> Written {
        match int.extract::<i64>() {
            Ok(n) => push_display(&mut self.out, n),
            Err(_) => {
                let py = int.py();
                // `int.__repr__` refuses past the interpreter's limit on
                // digits (4,300 by default); a Decimal of it writes them all.
                let digits = match py.get_type::<PyInt>().call_method1("__repr__", (int,)) {
                    Ok(digits) => digits,
                    Err(_) => decimal_class(py)?.call1((int,))?.str()?.into_any(),
                };
                self.out.push_str(&text_of(&digits, "a number's digits")?);
            }
        }
        Ok(())
    }

    /// A float as `repr` writes it; NaN and infinity have no JSON.
    fn float(&mut self, float: f64, value: &Bound<'_, PyAny>) -> Written {
        if !float.is_finite() {
            return Err(Fault::Invalid(format!(
                "{} is not a JSON number (JSON has no NaN or infinity)",
                value.repr()?
            )));
        }
        float_repr(float, &mut self.out);
        Ok(())
    }

    /// A `decimal.Decimal` as its digits; any other object has no JSON.
    fn other(&mut self, value: &Bound<'_, PyAny>) -> Written {
        let decimal = decimal_class(value.py())?;
        if !value.is_instance(decimal)? {
            return Err(Fault::Invalid(format!(
                "an object of type {} is not a JSON value (give dicts, lists, str, int, float, \
                 decimal.Decimal, bool or None)",
                type_name(value)
            )));
        }
        if !value.call_method0("is_finite")?.is_truthy()? {
            return Err(Fault::Invalid(format!(
                "{} is not a JSON number (JSON has no NaN or infinity)",
                value.repr()?
            )));
        }
        // `Decimal.__str__`: a subclass's own `__str__` need not give digits.
        let digits = decimal.call_method1("__str__", (value,))?;
        self.out.push_str(&text_of(&digits, "a number's digits")?);
        Ok(())
    }

    /// A str, quoted and escaped as `json.dumps` escapes it.
    fn string(&mut self, text: &Bound<'_, PyString>) -> Written {
        let bytes = match text.encode_utf8() {
            Ok(bytes) => bytes,
            // A lone surrogate: its three bytes as UTF-8 would write them,
            // which `escape` writes as its `\udXXX` escape.
            Err(_) => text
                .call_method1("encode", ("utf-8", "surrogatepass"))?
                .cast_into::<PyBytes>()
                .map_err(PyErr::from)?,
        };
        self.out.push('"');
        escape(bytes.as_bytes(), &mut self.out)?;
        self.out.push('"');
        Ok(())
    }
}

/// An item of a dict subclass's `items()`: a (key, value) tuple.
fn pair<'py>(item: &Bound<'py, PyAny>) -> Result<(Bound<'py, PyAny>, Bound<'py, PyAny>), Fault> {
    match item.cast::<PyTuple>() {
        Ok(tuple) if tuple.len() == 2 => Ok((tuple.get_item(0)?, tuple.get_item(1)?)),
        _ => Err(Fault::Invalid(
            "items() must give (key, value) tuples".to_owned(),
        )),
    }
}

/// Writes `value`'s `Display` (to a `String`, which cannot fail).
fn push_display(out: &mut String, value: impl std::fmt::Display) {
    let _ = write!(out, "{value}");
}

/// `bytes`, UTF-8 but for lone surrogates (as `surrogatepass` encodes
/// them), as the inside of a JSON string: `"`, `\` and control characters
/// escaped as `json.dumps` escapes them, a surrogate as `\udXXX`.
fn escape(bytes: &[u8], out: &mut String) -> Written {
    // Runs of bytes that need no escape are copied whole.
    let mut run = 0;
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        let surrogate = byte == 0xED && bytes.get(index + 1).is_some_and(|b| *b >= 0xA0);
        if byte >= 0x20 && byte != b'"' && byte != b'\\' && !surrogate {
            index += 1;
            continue;
        }
        out.push_str(utf8(&bytes[run..index])?);
        let width = if surrogate { 3 } else { 1 };
        match byte {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0C => out.push_str("\\f"),
            _ if surrogate => {
                let low = bytes.get(index + 2).copied().unwrap_or(0x80);
                let unit =
                    0xD000 | (u32::from(bytes[index + 1] & 0x3F) << 6) | u32::from(low & 0x3F);
                push_display(out, format_args!("\\u{unit:04x}"));
            }
            _ => push_display(out, format_args!("\\u{byte:04x}")),
        }
        index += width;
        run = index;
    }
    out.push_str(utf8(&bytes[run..])?);
    Ok(())
}

/// A run of bytes Python encoded as UTF-8 (never anything else).
fn utf8(bytes: &[u8]) -> Result<&str, Fault> {
    std::str::from_utf8(bytes).map_err(|e| Fault::Invalid(format!("a str is not UTF-8: {e}")))
}

/// Writes a finite float as Python's `repr` does: the shortest digits that
/// read back as the float, positional for a decimal exponent from -4 to 15
/// (`0.0001`, `100.0`), scientific otherwise (`1e-05`, `1e+16`).
fn float_repr(float: f64, out: &mut String) {
    // Rust's `{:e}` gives the same shortest digits: `-1.5e-7`, `1e16`.
    let scientific = format!("{float:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let Ok(exponent) = exponent.parse::<i32>() else {
        out.push_str(&scientific);
        return;
    };
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    out.push_str(sign);
    if (-4..16).contains(&exponent) {
        let point = usize::try_from(exponent + 1).unwrap_or(0);
        if exponent < 0 {
            out.push_str("0.");
            for _ in exponent..-1 {
                out.push('0');
            }
            out.push_str(&digits);
        } else if digits.len() <= point {
            out.push_str(&digits);
            for _ in digits.len()..point {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            out.push_str(&digits[..point]);
            out.push('.');
            out.push_str(&digits[point..]);
        }
    } else {
        let (first, rest) = digits.split_at(digits.len().min(1));
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let sign = if exponent < 0 { '-' } else { '+' };
        push_display(out, format_args!("e{sign}{:02}", exponent.unsigned_abs()));
    }
}
