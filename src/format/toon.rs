//! TOON (spec v4) through the `toon-format` crate.
//!
//! The crate implements the whole encoder (quoting, tabular and keyed tabular
//! forms, list items, delimiters, canonical numbers) and is tested against
//! the spec's fixtures, so nothing here is hand-written: this module only maps
//! the options and the tree.

use toon_format::{EncodeOptions, encode};

use super::tree::Tree;
use super::{Delimiter, FormatOptions};
use crate::error::Result;
use crate::fragment::error;

pub(super) fn write(tree: &Tree, options: &FormatOptions, out: &mut String) -> Result<()> {
    if tree.is_empty() {
        return Ok(());
    }
    let delimiter = match options.delimiter {
        Delimiter::Comma => toon_format::Delimiter::Comma,
        Delimiter::Tab => toon_format::Delimiter::Tab,
        Delimiter::Pipe => toon_format::Delimiter::Pipe,
    };
    let options = EncodeOptions::new()
        .with_delimiter(delimiter)
        .with_spaces(options.indent);
    let text = encode(&tree.to_value(), &options)
        .map_err(|e| error("", format!("the TOON encoder rejected the document: {e}")))?;
    out.push_str(&text);
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use toon_format::{DecodeOptions, Indent, decode};

    use crate::format::{Delimiter, FormatOptions, FragmentFormat, render_value};

    fn toon(value: &Value, options: &FormatOptions) -> String {
        render_value(value, FragmentFormat::Toon, options).unwrap()
    }

    #[test]
    fn the_design_example_holds_exactly() {
        let config = json!({"config": {"debug": true, "timeout": 30,
            "database": {"host": "localhost", "port": 5432}}});
        assert_eq!(
            toon(&config, &FormatOptions::default()),
            "config:\n  debug: true\n  timeout: 30\n  database:\n    host: localhost\n    port: 5432"
        );
    }

    #[test]
    fn uniform_records_take_the_tabular_form() {
        let users = json!({"users": [{"id": 1, "name": "Ada"}, {"id": 2, "name": "Bob, Jr."}]});
        assert_eq!(
            toon(&users, &FormatOptions::default()),
            "users[2]{id,name}:\n  1,Ada\n  2,\"Bob, Jr.\""
        );
    }

    #[test]
    fn delimiter_and_indent_are_honoured_and_decode() {
        let value =
            json!({"tags": ["a", "b|c"], "rows": [{"k": 1, "v": "x y"}], "o": {"p": {"q": 1}}});
        for (delimiter, header) in [
            (Delimiter::Comma, "tags[2]: a,b|c"),
            (Delimiter::Pipe, "tags[2|]: a|\"b|c\""),
            (Delimiter::Tab, "tags[2\t]: a\tb|c"),
        ] {
            let options = FormatOptions::default()
                .with_delimiter(delimiter)
                .with_indent(4);
            let out = toon(&value, &options);
            assert!(out.starts_with(header), "{out}");
            assert!(out.ends_with("o:\n    p:\n        q: 1"), "{out}");
            let decode_options = DecodeOptions::new().with_indent(Indent::Spaces(4));
            let back: Value = decode(&out, &decode_options).unwrap();
            assert_eq!(back, value);
        }
    }

    #[test]
    fn a_bare_document_needs_no_wrapper() {
        assert_eq!(toon(&json!("true"), &FormatOptions::default()), "\"true\"");
        assert_eq!(toon(&json!([1, 2]), &FormatOptions::default()), "[2]: 1,2");
    }

    fn decodes_to(text: &str, value: &Value) {
        let back: Value = decode(text, &DecodeOptions::new()).unwrap();
        assert_eq!(&back, value, "{text}");
    }

    #[test]
    fn strings_that_read_as_something_else_are_quoted() {
        let value = json!({"t": "true", "n": "null", "num": "-1", "e": "", "dash": "- x",
            "colon": "a: b", "nl": "one\ntwo", "hash": "#x", "pad": " p "});
        let out = toon(&value, &FormatOptions::default());
        assert_eq!(
            out,
            "t: \"true\"\nn: \"null\"\nnum: \"-1\"\ne: \"\"\ndash: \"- x\"\ncolon: \"a: b\"\n\
             nl: \"one\\ntwo\"\nhash: \"#x\"\npad: \" p \""
        );
        decodes_to(&out, &value);
    }

    #[test]
    fn nested_uniform_columns_form_field_groups() {
        let value = json!({"orders": [
            {"id": 1, "customer": {"name": "Ada", "country": "DK"}},
            {"id": 2, "customer": {"name": "Bob", "country": "UK"}},
        ]});
        let out = toon(&value, &FormatOptions::default());
        assert_eq!(
            out,
            "orders[2]{id,customer{name,country}}:\n  1,Ada,DK\n  2,Bob,UK"
        );
        decodes_to(&out, &value);
    }

    #[test]
    fn non_uniform_lists_use_list_items() {
        let value = json!({"steps": [{"run": "test"}, {"run": "lint", "strict": true}, "done"]});
        let out = toon(&value, &FormatOptions::default());
        assert_eq!(
            out,
            "steps[3]:\n  - run: test\n  - run: lint\n    strict: true\n  - done"
        );
        decodes_to(&out, &value);
    }
}
