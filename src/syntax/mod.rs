//! The syntaxes everything above reads and writes, written once: JSON
//! input by this crate's rules (duplicate keys, depth, places in errors,
//! numbers that keep their digits, raw JSON values) and XML's rules (what a
//! name is, how text and attributes are escaped), with the impls that make
//! shared strings read like `&str`.

pub(crate) mod json_input;
pub(crate) mod json_number;
pub(crate) mod json_scan;
pub(crate) mod json_text;
pub(crate) mod str_like;
pub(crate) mod xml;
