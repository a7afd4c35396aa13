//! Any `Serialize` value written straight into Python objects: dicts,
//! lists, str, int, float, bool and None, as `json.loads` would read its
//! JSON, without the JSON text in between.
//!
//! serde_json's numbers keep their digits (`arbitrary_precision`): they
//! serialize as a one-field struct holding the digits, which becomes the
//! int `json.loads` reads from them, the float when a float holds their
//! value exactly, else a `decimal.Decimal` of the digits (where
//! `json.loads` would give `inf`, `0.0` or a rounded float).

use std::fmt;

use agent_context::command::same_value;
use pyo3::BoundObject;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyFloat, PyInt, PyList, PyString, PyType};
use serde::Deserialize;
use serde::ser::{self, Serialize};
use serde_json::Value;

use crate::struct_names::{number_struct, raw_value_struct};

/// `value` as Python objects.
pub fn to_python<'py>(py: Python<'py>, value: &impl Serialize) -> PyResult<Bound<'py, PyAny>> {
    to_python_skipping(py, value, &[])
}

/// The value of JSON `text` the library wrote, as Python objects, its
/// numbers as [`to_python`] gives them.
pub fn json_to_python<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    let mut reader = serde_json::Deserializer::from_str(text);
    // As deep as the library wrote it: its input is bounded at
    // `MAX_JSON_DEPTH`, a few levels less than what it writes around it.
    reader.disable_recursion_limit();
    let value = Value::deserialize(&mut reader)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("unreadable output: {e}")))?;
    to_python(py, &value)
}

static DECIMAL: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `decimal.Decimal`, imported the first time a value needs it.
pub fn decimal_class(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    DECIMAL
        .get_or_try_init(py, || {
            let class = py.import("decimal")?.getattr("Decimal")?;
            Ok::<_, PyErr>(class.cast_into::<PyType>()?.unbind())
        })
        .map(|class| class.bind(py))
}

/// `value`, a struct, as a dict whose fields named in `skip` are None:
/// the caller fills them in, keeping the struct's order of keys.
pub fn to_python_skipping<'py>(
    py: Python<'py>,
    value: &impl Serialize,
    skip: &'static [&'static str],
) -> PyResult<Bound<'py, PyAny>> {
    value.serialize(Writer { py, skip }).map_err(|e| e.0)
}

/// A Python error met while writing, carried through serde.
#[derive(Debug)]
pub struct Error(PyErr);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error(pyo3::exceptions::PyValueError::new_err(msg.to_string()))
    }
}

impl From<PyErr> for Error {
    fn from(error: PyErr) -> Self {
        Error(error)
    }
}

type Out<'py> = Result<Bound<'py, PyAny>, Error>;

#[derive(Clone, Copy)]
struct Writer<'py> {
    py: Python<'py>,
    /// Fields of the outermost struct left as None.
    skip: &'static [&'static str],
}

impl<'py> Writer<'py> {
    fn int(self, v: impl IntoPyObject<'py>) -> Out<'py> {
        Ok(v.into_pyobject(self.py)
            .map_err(Into::into)?
            .into_any()
            .into_bound())
    }
}

/// A JSON number's text as Python holds it exactly: an int for an
/// integer; a float for a fraction or exponent whose value a float holds;
/// else a `decimal.Decimal` of the digits (`1e400`, `1E-400`,
/// `0.1000000000000000000001`).
fn number<'py>(py: Python<'py>, digits: &str) -> Out<'py> {
    // An int cannot say `-0`: a Decimal keeps its sign.
    if digits == "-0" {
        return Ok(decimal_class(py)?.call1((digits,))?);
    }
    if let Ok(n) = digits.parse::<i64>() {
        return Writer { py, skip: &[] }.int(n);
    }
    if !digits.contains(['.', 'e', 'E']) {
        // `int(str)` refuses past the interpreter's limit on digits (4,300
        // by default); an int made from a Decimal has none.
        return Ok(match py.get_type::<PyInt>().call1((digits,)) {
            Ok(int) => int,
            Err(_) => py
                .get_type::<PyInt>()
                .call1((decimal_class(py)?.call1((digits,))?,))?,
        });
    }
    match exact_float(digits) {
        Some(float) => Ok(PyFloat::new(py, float).into_any()),
        None => Ok(decimal_class(py)?.call1((digits,))?),
    }
}

/// The float whose value is exactly that of `digits` (`1.50` is 1.5),
/// if there is one: the float read from them, written back in its
/// shortest form, is the same decimal value.
fn exact_float(digits: &str) -> Option<f64> {
    let float = digits.parse::<f64>().ok().filter(|f| f.is_finite())?;
    same_value(&format!("{float:e}"), digits).then_some(float)
}

impl<'py> ser::Serializer for Writer<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = Error;
    type SerializeSeq = Seq<'py>;
    type SerializeTuple = Seq<'py>;
    type SerializeTupleStruct = Seq<'py>;
    type SerializeTupleVariant = Variant<Seq<'py>>;
    type SerializeMap = Map<'py>;
    type SerializeStruct = Struct<'py>;
    type SerializeStructVariant = Variant<Struct<'py>>;

    fn serialize_bool(self, v: bool) -> Out<'py> {
        self.int(v)
    }
    fn serialize_i8(self, v: i8) -> Out<'py> {
        self.int(v)
    }
    fn serialize_i16(self, v: i16) -> Out<'py> {
        self.int(v)
    }
    fn serialize_i32(self, v: i32) -> Out<'py> {
        self.int(v)
    }
    fn serialize_i64(self, v: i64) -> Out<'py> {
        self.int(v)
    }
    fn serialize_i128(self, v: i128) -> Out<'py> {
        self.int(v)
    }
    fn serialize_u8(self, v: u8) -> Out<'py> {
        self.int(v)
    }
    fn serialize_u16(self, v: u16) -> Out<'py> {
        self.int(v)
    }
    fn serialize_u32(self, v: u32) -> Out<'py> {
        self.int(v)
    }
    fn serialize_u64(self, v: u64) -> Out<'py> {
        self.int(v)
    }
    fn serialize_u128(self, v: u128) -> Out<'py> {
        self.int(v)
    }
    fn serialize_f32(self, v: f32) -> Out<'py> {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Out<'py> {
        // serde_json writes a non-finite float as null.
        if !v.is_finite() {
            return self.serialize_unit();
        }
        Ok(PyFloat::new(self.py, v).into_any())
    }
    fn serialize_char(self, v: char) -> Out<'py> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Out<'py> {
        Ok(PyString::new(self.py, v).into_any())
    }
    fn serialize_bytes(self, v: &[u8]) -> Out<'py> {
        let items: Vec<Bound<'py, PyAny>> =
            v.iter().map(|b| self.int(*b)).collect::<Result<_, _>>()?;
        Ok(PyList::new(self.py, items)?.into_any())
    }
    fn serialize_none(self) -> Out<'py> {
        self.serialize_unit()
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Out<'py> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Out<'py> {
        Ok(self.py.None().into_bound(self.py))
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Out<'py> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Out<'py> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Out<'py> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Out<'py> {
        let dict = PyDict::new(self.py);
        dict.set_item(variant, value.serialize(self)?)?;
        Ok(dict.into_any())
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Seq<'py>, Error> {
        Ok(Seq {
            writer: Writer {
                py: self.py,
                skip: &[],
            },
            items: Vec::with_capacity(len.unwrap_or(0)),
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq<'py>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Seq<'py>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<Seq<'py>>, Error> {
        Ok(Variant {
            variant,
            inner: self.serialize_seq(Some(len))?,
        })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Map<'py>, Error> {
        Ok(Map {
            writer: Writer {
                py: self.py,
                skip: &[],
            },
            dict: PyDict::new(self.py),
            key: None,
        })
    }
    fn serialize_struct(self, name: &'static str, _len: usize) -> Result<Struct<'py>, Error> {
        Ok(Struct {
            writer: Writer {
                py: self.py,
                skip: &[],
            },
            skip: self.skip,
            dict: PyDict::new(self.py),
            special: Special::of(name),
            value: None,
        })
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<Struct<'py>>, Error> {
        Ok(Variant {
            variant,
            inner: Writer {
                py: self.py,
                skip: &[],
            }
            .serialize_struct(variant, len)?,
        })
    }
}

pub struct Seq<'py> {
    writer: Writer<'py>,
    items: Vec<Bound<'py, PyAny>>,
}

impl<'py> Seq<'py> {
    fn push<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.items.push(value.serialize(self.writer)?);
        Ok(())
    }
    fn finish(self) -> Out<'py> {
        Ok(PyList::new(self.writer.py, self.items)?.into_any())
    }
}

impl<'py> ser::SerializeSeq for Seq<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Out<'py> {
        self.finish()
    }
}

impl<'py> ser::SerializeTuple for Seq<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Out<'py> {
        self.finish()
    }
}

impl<'py> ser::SerializeTupleStruct for Seq<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Out<'py> {
        self.finish()
    }
}

pub struct Map<'py> {
    writer: Writer<'py>,
    dict: Bound<'py, PyDict>,
    key: Option<Bound<'py, PyAny>>,
}

impl<'py> ser::SerializeMap for Map<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = Error;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), Error> {
        let key = key.serialize(self.writer)?;
        // JSON keys are strings: `json.loads` gives str keys.
        self.key = Some(if key.is_instance_of::<PyString>() {
            key
        } else {
            key.str()?.into_any()
        });
        Ok(())
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        let key = self
            .key
            .take()
            .ok_or_else(|| <Error as ser::Error>::custom("a map value without its key"))?;
        self.dict.set_item(key, value.serialize(self.writer)?)?;
        Ok(())
    }
    fn end(self) -> Out<'py> {
        Ok(self.dict.into_any())
    }
}

pub struct Struct<'py> {
    writer: Writer<'py>,
    skip: &'static [&'static str],
    dict: Bound<'py, PyDict>,
    /// serde_json's number or raw value, whose one field is its text.
    special: Option<Special>,
    value: Option<Bound<'py, PyAny>>,
}

/// The structs serde_json writes its own values as.
#[derive(Clone, Copy)]
enum Special {
    /// An exact number: its one field holds the digits.
    Number,
    /// A raw JSON value: its one field holds the JSON text.
    RawValue,
}

impl Special {
    /// The special struct `name` is, if any.
    fn of(name: &'static str) -> Option<Special> {
        if Some(name) == number_struct() {
            Some(Special::Number)
        } else if Some(name) == raw_value_struct() {
            Some(Special::RawValue)
        } else {
            None
        }
    }
}

impl<'py> ser::SerializeStruct for Struct<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        if self.skip.contains(&key) {
            self.dict.set_item(key, self.writer.py.None())?;
            return Ok(());
        }
        let value = value.serialize(self.writer)?;
        match self.special {
            Some(Special::Number) => {
                let digits: String = value.extract()?;
                self.value = Some(number(self.writer.py, &digits)?);
            }
            Some(Special::RawValue) => {
                let text: String = value.extract()?;
                self.value = Some(json_to_python(self.writer.py, &text)?);
            }
            None => self.dict.set_item(key, value)?,
        }
        Ok(())
    }
    fn skip_field(&mut self, _key: &'static str) -> Result<(), Error> {
        Ok(())
    }
    fn end(self) -> Out<'py> {
        Ok(self.value.unwrap_or_else(|| self.dict.into_any()))
    }
}

/// An enum variant with content: `{variant: content}`.
pub struct Variant<T> {
    variant: &'static str,
    inner: T,
}

impl<'py> ser::SerializeTupleVariant for Variant<Seq<'py>> {
    type Ok = Bound<'py, PyAny>;
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.inner.push(value)
    }
    fn end(self) -> Out<'py> {
        let py = self.inner.writer.py;
        let dict = PyDict::new(py);
        dict.set_item(self.variant, self.inner.finish()?)?;
        Ok(dict.into_any())
    }
}

impl<'py> ser::SerializeStructVariant for Variant<Struct<'py>> {
    type Ok = Bound<'py, PyAny>;
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        ser::SerializeStruct::serialize_field(&mut self.inner, key, value)
    }
    fn end(self) -> Out<'py> {
        let py = self.inner.writer.py;
        let dict = PyDict::new(py);
        dict.set_item(self.variant, ser::SerializeStruct::end(self.inner)?)?;
        Ok(dict.into_any())
    }
}
