//! The struct names serde_json serializes its exact numbers and raw JSON
//! values under, asked of serde_json itself rather than spelled out here:
//! they are private to it, and a writer that spelled them would turn
//! every number into a dict, silently, on the day serde_json renamed them.

use std::fmt;
use std::sync::OnceLock;

use serde::Serialize;
use serde::ser::{self, Impossible};
use serde_json::Number;
use serde_json::value::RawValue;

/// The name serde_json writes a `Number` under (`arbitrary_precision`).
pub fn number_struct() -> Option<&'static str> {
    static NAME: OnceLock<Option<&'static str>> = OnceLock::new();
    *NAME.get_or_init(|| struct_name(&Number::from(0)))
}

/// The name serde_json writes a `RawValue` under.
pub fn raw_value_struct() -> Option<&'static str> {
    static NAME: OnceLock<Option<&'static str>> = OnceLock::new();
    *NAME.get_or_init(|| {
        let raw = RawValue::from_string("0".to_owned()).ok()?;
        struct_name(&raw)
    })
}

/// The name `value` serializes a struct under, if it serializes as one.
fn struct_name(value: &impl Serialize) -> Option<&'static str> {
    match value.serialize(Probe) {
        Err(Found(name)) => name,
        Ok(()) => None,
    }
}

/// A serializer that only notes the name of the struct it is given.
struct Probe;

/// What the probe found: a struct's name, or no struct.
#[derive(Debug)]
struct Found(Option<&'static str>);

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "struct {:?}", self.0)
    }
}

impl std::error::Error for Found {}

impl ser::Error for Found {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Found(None)
    }
}

/// Methods that find no struct.
macro_rules! no_struct {
    ($($method:ident($($arg:ty),*) -> $out:ty;)*) => {
        $(fn $method(self, $(_: $arg),*) -> Result<$out, Found> {
            Err(Found(None))
        })*
    };
}

impl ser::Serializer for Probe {
    type Ok = ();
    type Error = Found;
    type SerializeSeq = Impossible<(), Found>;
    type SerializeTuple = Impossible<(), Found>;
    type SerializeTupleStruct = Impossible<(), Found>;
    type SerializeTupleVariant = Impossible<(), Found>;
    type SerializeMap = Impossible<(), Found>;
    type SerializeStruct = Impossible<(), Found>;
    type SerializeStructVariant = Impossible<(), Found>;

    no_struct! {
        serialize_bool(bool) -> ();
        serialize_i8(i8) -> ();
        serialize_i16(i16) -> ();
        serialize_i32(i32) -> ();
        serialize_i64(i64) -> ();
        serialize_u8(u8) -> ();
        serialize_u16(u16) -> ();
        serialize_u32(u32) -> ();
        serialize_u64(u64) -> ();
        serialize_f32(f32) -> ();
        serialize_f64(f64) -> ();
        serialize_char(char) -> ();
        serialize_str(&str) -> ();
        serialize_bytes(&[u8]) -> ();
        serialize_none() -> ();
        serialize_unit() -> ();
        serialize_unit_struct(&'static str) -> ();
        serialize_unit_variant(&'static str, u32, &'static str) -> ();
        serialize_seq(Option<usize>) -> Self::SerializeSeq;
        serialize_tuple(usize) -> Self::SerializeTuple;
        serialize_tuple_struct(&'static str, usize) -> Self::SerializeTupleStruct;
        serialize_tuple_variant(&'static str, u32, &'static str, usize) -> Self::SerializeTupleVariant;
        serialize_map(Option<usize>) -> Self::SerializeMap;
        serialize_struct_variant(&'static str, u32, &'static str, usize) -> Self::SerializeStructVariant;
    }

    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<(), Found> {
        Err(Found(None))
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), Found> {
        Err(Found(None))
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Found> {
        Err(Found(None))
    }

    fn serialize_struct(
        self,
        name: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Found> {
        Err(Found(Some(name)))
    }
}
