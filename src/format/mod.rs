//! Structured context as text: [`Fragment`]s, or any JSON value, rendered as
//! XML, Markdown, TOML or TOON.
//!
//! # One traversal
//!
//! Every format writes the same normalized [`Tree`], built once by
//! [`Tree::from_fragments`] or [`Tree::from_value`]:
//!
//! * **fragments drop what says nothing** (a prompt-building choice: it
//!   costs tokens and tells the model nothing): nulls are removed, in objects
//!   and in arrays alike, then empty objects and arrays are skipped,
//!   including those that only held nulls, and a fragment whose data ends up
//!   empty renders nothing;
//! * **a JSON value loses nothing** ([`render_value`], the CLI's `--data`):
//!   nulls and empty containers are kept, and each format shows them as
//!   written below (TOML, which has no null, drops nulls and nothing else);
//! * **a child fragment is the key of its name**, in order; a name given
//!   twice among siblings is two entries, each written as it comes
//!   (`<hint>a</hint><hint>b</hint>`), the reference's default. With
//!   [`FormatOptions::group_fragments`] (and always in TOML and TOON, whose
//!   tables cannot repeat a key) they form one list under the plural of the
//!   name (`hint`, `hint` -> `hints`, by a simple English rule; the name
//!   itself when a sibling already uses the plural), at the first one's
//!   position (as [`Tree::to_value`] shows);
//! * **a list holding a fragment is a children list wherever it sits** in a
//!   fragment's data, under an object's key too (`{"columns": [{"name":
//!   "column", "data": …}, …]}`, as the reference's table grounding writes
//!   it): its fragments are keys of their names, not records with `name`
//!   and `data` fields;
//! * **a single child is not wrapped again**: a top-level fragment whose
//!   data is a list of one primitive or one object (`{"name":
//!   "available_sections", "data": ["text"]}`, what the reference's
//!   `fragment(name, "text")` stores) is written in XML and Markdown as that
//!   element, `<available_sections>text</available_sections>`; TOML and TOON
//!   show the list they are given;
//! * **nesting is bounded**: a container deeper than 64 levels (a
//!   list of repeated names counts as a level, grouped or not) is an
//!   [`ErrorKind::Fragment`] naming its path,
//!   never a stack overflow. 64 keeps every output within what its parser
//!   accepts (the `toml` crate stops at 80 levels of inline nesting);
//! * key order is kept (TOML alone moves a table's plain keys ahead of its
//!   sub-tables, as the format requires).
//!
//! XML and Markdown are written by a crate-private walk of the [`Tree`],
//! one writer per format; TOML and TOON hand [`Tree::to_value`] to the
//! `toml` and `toon-format` crates, which own those grammars.
//!
//! # The formats
//!
//! No output ends with a newline. Given the design's example
//! `fragment("config", {debug: true, timeout: 30}, fragment("database", {host: "localhost", port: 5432}))`:
//!
//! * [`FragmentFormat::Xml`]: one element per key, [`FormatOptions::indent`]
//!   spaces per level. Text is fully escaped (`&`, `<`, `>`, a carriage return
//!   as `&#13;`; characters XML 1.0 forbids become U+FFFD) and written verbatim,
//!   never re-indented, so a strict parser returns it unchanged. A key that is
//!   not an XML name (or holds a `:`) becomes `<item name="…">`. List elements
//!   are named by the singular of the key (`<tags><tag>`) or `item`; grouped
//!   fragments by their name (`<hints><hint>`). Top-level
//!   entries are sibling elements, one after another. In a JSON value, an
//!   empty object or array is an empty element, `<key/>`, and a null is
//!   `<key null="true"/>` (an attribute, so it differs from the string
//!   `"null"`; an empty string stays `<key></key>`).
//!   ```text
//!   <config>
//!     <debug>true</debug>
//!     <timeout>30</timeout>
//!     <database>
//!       <host>localhost</host>
//!       <port>5432</port>
//!     </database>
//!   </config>
//!   ```
//! * [`FragmentFormat::Markdown`]: `## Title` per top-level key (title-cased),
//!   then every value is one bullet, `- **key**: value` (a bare `- value` in
//!   a list or for a top-level primitive), nested lists indented by two
//!   spaces; a container inside a list is labelled `**tag 1**`. Grouped
//!   fragments sit under their title-cased plural, each labelled by its name
//!   (`- **Hints**:` then `- **hint**: a`), as the reference writes them. Values are
//!   verbatim except: a line that would open a Markdown block that can break
//!   the bullets (list item, heading, quote, fence, thematic break, setext
//!   underline) gets a backslash before its marker; line breaks are `\n` (a
//!   carriage return becomes one); a bare bullet drops leading whitespace,
//!   and an empty or blank value is written `""` (an empty bullet would not
//!   be a list item where it follows a paragraph). Continuation lines are
//!   indented into their bullet, so each value stays one list item; inline
//!   markup and HTML in values are left as they are. Keys escape Markdown's
//!   inline markers; line breaks in keys become spaces. Sections are
//!   separated by a blank line. In a JSON value, an empty array, an empty
//!   object and a null are written as JSON spells them: `- **key**: []`,
//!   `{}`, `null`. Markdown is for reading: strings are not quoted, so the
//!   string `"null"` reads like a null, as `"5432"` reads like a number,
//!   and a list inside a list shows its items, not its brackets (`[null]`
//!   and `null` both read `- null`).
//!   ```text
//!   ## Config
//!   - **debug**: true
//!   - **timeout**: 30
//!   - **database**:
//!     - **host**: localhost
//!     - **port**: 5432
//!   ```
//! * [`FragmentFormat::Toml`]: through the `toml` crate. A document that is
//!   not a table is wrapped as the key `value` (`value = 42`). TOML has
//!   no null: a null is dropped, as a table key and as an array element
//!   alike (`[1, null, 2]` is written `[1, 2]`: the elements after it move
//!   up), and a document that is `null` is empty. Nothing else is dropped:
//!   empty arrays and tables are written (`a = []`, `[t]`, `[[rows]]`),
//!   also inside arrays (`[true, [], "x"]`). Integers above `i64::MAX`, which
//!   TOML integers cannot hold, are written as strings of the same digits:
//!   the digits survive, the type does not. The output always parses, to
//!   the input minus nulls with such integers as strings (for fragments,
//!   minus empty containers too).
//!   ```text
//!   [config]
//!   debug = true
//!   timeout = 30
//!
//!   [config.database]
//!   host = "localhost"
//!   port = 5432
//!   ```
//! * [`FragmentFormat::Toon`]: TOON spec v4 through the `toon-format` crate,
//!   with [`FormatOptions::delimiter`] and [`FormatOptions::indent`]; uniform
//!   arrays of objects take the tabular form. Fragments decode to the input
//!   minus nulls and empty containers; [`render_value`] keeps them and is
//!   lossless, passing the spec's encode conformance fixtures (numbers
//!   compare by value: TOON writes `1.0` as `1`).
//!   ```text
//!   config:
//!     debug: true
//!     timeout: 30
//!     database:
//!       host: localhost
//!       port: 5432
//!   ```

mod grouping;
mod markdown_writer;
mod normalize;
mod toml;
mod toon;
mod tree;
mod xml_writer;

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

pub use tree::Tree;
pub(crate) use tree::TreeWriter;

use crate::error::{ErrorKind, Result};
use crate::fragment::Fragment;
pub(crate) use crate::fragment::push_key;
pub(crate) use crate::fragment::{MAX_DEPTH, ROOT_KEY};

/// The widest indent accepted, in spaces per level.
pub(crate) const MAX_INDENT: usize = 16;

/// An output format for structured context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum FragmentFormat {
    /// Nested elements; text escaped so a strict parser reads it back.
    #[default]
    Xml,
    /// `## Title` sections of `- **key**: value` bullets.
    Markdown,
    /// TOML through the `toml` crate.
    Toml,
    /// TOON (spec v4) through the `toon-format` crate.
    Toon,
}

impl FragmentFormat {
    /// Every format, in documentation order.
    pub const ALL: [FragmentFormat; 4] = [
        FragmentFormat::Xml,
        FragmentFormat::Markdown,
        FragmentFormat::Toml,
        FragmentFormat::Toon,
    ];

    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            FragmentFormat::Xml => "xml",
            FragmentFormat::Markdown => "markdown",
            FragmentFormat::Toml => "toml",
            FragmentFormat::Toon => "toon",
        }
    }
}

impl fmt::Display for FragmentFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FragmentFormat {
    type Err = crate::Error;

    /// Parses `xml`, `markdown` (or `md`), `toml` or `toon`, ignoring case.
    fn from_str(name: &str) -> Result<Self> {
        match name.to_ascii_lowercase().as_str() {
            "xml" => Ok(FragmentFormat::Xml),
            "markdown" | "md" => Ok(FragmentFormat::Markdown),
            "toml" => Ok(FragmentFormat::Toml),
            "toon" => Ok(FragmentFormat::Toon),
            _ => Err(option_error(
                "format",
                format!("unknown format {name:?}; expected xml, markdown, toml or toon"),
            )),
        }
    }
}

/// What separates the values of a TOON array or table row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Delimiter {
    /// `,` (TOON's default, declared by omission).
    #[default]
    Comma,
    /// A tab.
    Tab,
    /// `|`.
    Pipe,
}

impl Delimiter {
    /// The character written between values.
    pub fn as_char(self) -> char {
        match self {
            Delimiter::Comma => ',',
            Delimiter::Tab => '\t',
            Delimiter::Pipe => '|',
        }
    }
}

impl FromStr for Delimiter {
    type Err = crate::Error;

    /// Parses `,` / `comma`, `tab` / a tab character, `|` / `pipe`.
    fn from_str(name: &str) -> Result<Self> {
        match name {
            "," | "comma" => Ok(Delimiter::Comma),
            "\t" | "tab" => Ok(Delimiter::Tab),
            "|" | "pipe" => Ok(Delimiter::Pipe),
            _ => Err(option_error(
                "delimiter",
                format!("unknown delimiter {name:?}; expected `,`, `tab` or `|` (`pipe`)"),
            )),
        }
    }
}

/// Layout options; each format uses those it has a place for.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FormatOptions {
    /// TOON's array delimiter. Default: comma.
    pub delimiter: Delimiter,
    /// Spaces per nesting level for XML and TOON (TOON needs at least 1), at
    /// most 16. Markdown always indents by 2, the width of `- `;
    /// TOML has no indentation. Default: 2.
    pub indent: usize,
    /// XML and Markdown: gather the fragments whose name repeats among
    /// siblings into one list under the plural of the name
    /// (`<hints><hint>…</hint><hint>…</hint></hints>`), as the reference's
    /// `groupFragments` option does. Default: `false`, each fragment written
    /// as it comes (`<hint>…</hint><hint>…</hint>`), the reference's
    /// default. TOML and TOON, whose tables cannot repeat a key, always
    /// group.
    pub group_fragments: bool,
}

impl Default for FormatOptions {
    fn default() -> Self {
        FormatOptions {
            delimiter: Delimiter::Comma,
            indent: 2,
            group_fragments: false,
        }
    }
}

impl FormatOptions {
    /// These options with `delimiter`.
    pub fn with_delimiter(mut self, delimiter: Delimiter) -> Self {
        self.delimiter = delimiter;
        self
    }

    /// These options with `indent` spaces per level.
    pub fn with_indent(mut self, indent: usize) -> Self {
        self.indent = indent;
        self
    }

    /// These options with repeated fragment names gathered under their
    /// plural in XML and Markdown, or not ([`FormatOptions::group_fragments`]).
    pub fn with_group_fragments(mut self, group: bool) -> Self {
        self.group_fragments = group;
        self
    }

    fn validate(&self, format: FragmentFormat) -> Result<()> {
        // TOON nests by indentation alone; the others can do without.
        let least = usize::from(format == FragmentFormat::Toon);
        let range = format!("use {least} to {MAX_INDENT} for {format}");
        if self.indent > MAX_INDENT {
            return Err(option_error(
                "indent",
                format!("{} spaces is too wide; {range}", self.indent),
            ));
        }
        if self.indent < least {
            return Err(option_error(
                "indent",
                format!("TOON nests by indentation and needs at least 1 space per level; {range}"),
            ));
        }
        Ok(())
    }
}

/// Renders `fragments` as one document in `format`.
///
/// ```
/// use agent_context::format::{FormatOptions, FragmentFormat, render_fragments};
/// use agent_context::fragment::{hint, role};
///
/// let context = [role("You review Rust."), hint("Be brief."), hint("Cite lines.")];
/// let xml = render_fragments(&context, FragmentFormat::Xml, &FormatOptions::default())?;
/// assert_eq!(
///     xml,
///     "<role>You review Rust.</role>\n<hint>Be brief.</hint>\n<hint>Cite lines.</hint>"
/// );
/// let grouped = FormatOptions::default().with_group_fragments(true);
/// let xml = render_fragments(&context, FragmentFormat::Xml, &grouped)?;
/// assert_eq!(
///     xml,
///     "<role>You review Rust.</role>\n<hints>\n  <hint>Be brief.</hint>\n  <hint>Cite lines.</hint>\n</hints>"
/// );
/// # Ok::<(), agent_context::Error>(())
/// ```
///
/// # Errors
///
/// [`ErrorKind::Fragment`] when nesting passes 64 levels (or the TOML
/// or TOON library rejects the document); [`ErrorKind::Option`] for an
/// indent out of range.
pub fn render_fragments(
    fragments: &[Fragment],
    format: FragmentFormat,
    options: &FormatOptions,
) -> Result<String> {
    let mut out = String::new();
    Tree::from_fragments(fragments)?.write_to(format, options, &mut out)?;
    Ok(out)
}

/// Renders any JSON value (the CLI's `--data`) in `format`. An object's keys
/// are the top-level entries, like fragments; other values render under
/// `value` where the format needs a key (TOON does not). Unlike
/// fragments, nulls and empty containers are kept, as the [module
/// docs](self) describe per format.
///
/// ```
/// use agent_context::format::{FormatOptions, FragmentFormat, render_value};
/// use serde_json::json;
///
/// let value = json!({"tags": [], "owner": null});
/// let xml = render_value(&value, FragmentFormat::Xml, &FormatOptions::default())?;
/// assert_eq!(xml, "<tags/>\n<owner null=\"true\"/>");
/// let toml = render_value(&value, FragmentFormat::Toml, &FormatOptions::default())?;
/// assert_eq!(toml, "tags = []");
/// # Ok::<(), agent_context::Error>(())
/// ```
///
/// TOON encodes the value as it is, exactly as the TOON spec (v4) says:
/// nulls, empty arrays (`items: []`, `- [0]:` in a list) and empty objects
/// (`user:`, a bare `-` in a list) are kept, so the output decodes to the
/// input.
///
/// ```
/// use agent_context::format::{FormatOptions, FragmentFormat, render_value};
///
/// let value = serde_json::json!({"tags": [], "rows": [{"a": 1, "b": null}], "more": [{}]});
/// let toon = render_value(&value, FragmentFormat::Toon, &FormatOptions::default())?;
/// assert_eq!(toon, "tags: []\nrows[1]{a,b}:\n  1,null\nmore[1]:\n  -");
/// # Ok::<(), agent_context::Error>(())
/// ```
///
/// # Errors
///
/// As [`render_fragments`].
pub fn render_value(
    value: &Value,
    format: FragmentFormat,
    options: &FormatOptions,
) -> Result<String> {
    let mut out = String::new();
    Tree::from_value(value)?.write_to(format, options, &mut out)?;
    Ok(out)
}

impl Tree {
    /// Appends this tree to `out` in `format`, without a trailing newline;
    /// an empty tree appends nothing.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Option`] for an indent out of range;
    /// [`ErrorKind::Fragment`] if the TOML or TOON library rejects the tree.
    pub fn write_to(
        &self,
        format: FragmentFormat,
        options: &FormatOptions,
        out: &mut String,
    ) -> Result<()> {
        options.validate(format)?;
        let start = out.len();
        match format {
            FragmentFormat::Xml => {
                self.walk_as(
                    options,
                    &mut xml_writer::XmlWriter::new(options.indent),
                    out,
                );
            }
            FragmentFormat::Markdown => {
                self.walk_as(options, &mut markdown_writer::MarkdownWriter, out)
            }
            FragmentFormat::Toml => toml::write(self, out)?,
            FragmentFormat::Toon => toon::write(self, options, out)?,
        }
        if out.len() > start && out.ends_with('\n') {
            out.pop();
        }
        Ok(())
    }
}

impl Tree {
    /// Walks grouped or not, as `options` say.
    fn walk_as(&self, options: &FormatOptions, writer: &mut dyn TreeWriter, out: &mut String) {
        if options.group_fragments {
            self.walk_grouped(writer, out);
        } else {
            self.walk(writer, out);
        }
    }
}

fn option_error(option: &str, message: String) -> crate::Error {
    ErrorKind::Option {
        option: option.to_owned(),
        message,
    }
    .into()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_parse_back() {
        for format in FragmentFormat::ALL {
            assert_eq!(format.as_str().parse::<FragmentFormat>().unwrap(), format);
        }
        assert_eq!(
            "MD".parse::<FragmentFormat>().unwrap(),
            FragmentFormat::Markdown
        );
        let error = "yaml".parse::<FragmentFormat>().unwrap_err().to_string();
        assert_eq!(
            error,
            "invalid option `format`: unknown format \"yaml\"; expected xml, markdown, toml or toon"
        );
        assert_eq!("tab".parse::<Delimiter>().unwrap(), Delimiter::Tab);
        assert_eq!("|".parse::<Delimiter>().unwrap().as_char(), '|');
        assert!(";".parse::<Delimiter>().is_err());
    }

    #[test]
    fn indent_is_validated_per_format() {
        let value = json!({"a": {"b": 1}});
        let zero = FormatOptions::default().with_indent(0);
        assert_eq!(
            render_value(&value, FragmentFormat::Xml, &zero).unwrap(),
            "<a>\n<b>1</b>\n</a>"
        );
        let error = render_value(&value, FragmentFormat::Toon, &zero).unwrap_err();
        assert!(matches!(error.kind(), ErrorKind::Option { option, .. } if option == "indent"));
        assert_eq!(
            error.to_string(),
            "invalid option `indent`: TOON nests by indentation and needs at least 1 space per \
             level; use 1 to 16 for toon"
        );
        let wide = FormatOptions::default().with_indent(100);
        let error = |format| render_value(&value, format, &wide).unwrap_err().to_string();
        assert_eq!(
            error(FragmentFormat::Toon),
            "invalid option `indent`: 100 spaces is too wide; use 1 to 16 for toon"
        );
        assert_eq!(
            error(FragmentFormat::Xml),
            "invalid option `indent`: 100 spaces is too wide; use 0 to 16 for xml"
        );
        assert!(error(FragmentFormat::Markdown).ends_with("use 0 to 16 for markdown"));
    }

    #[test]
    fn empty_fragments_render_nothing() {
        for format in FragmentFormat::ALL {
            for value in [json!(null), json!({}), json!([]), json!({"a": [null, {}]})] {
                let fragment = Fragment::new("empty", value.clone());
                let out = render_fragments(&[fragment], format, &FormatOptions::default());
                assert_eq!(out.unwrap(), "", "{format} {value}");
            }
            assert_eq!(
                render_fragments(&[], format, &FormatOptions::default()).unwrap(),
                ""
            );
            // An object's keys are the top-level entries: here, none.
            let out = render_value(&json!({}), format, &FormatOptions::default()).unwrap();
            assert_eq!(out, "", "{format}");
        }
    }

    #[test]
    fn data_keeps_nulls_and_empty_containers_visible() {
        let value = json!({"a": [null, {}], "e": [], "n": null});
        let render = |format| render_value(&value, format, &FormatOptions::default()).unwrap();
        assert_eq!(
            render(FragmentFormat::Xml),
            "<a>\n  <item null=\"true\"/>\n  <item/>\n</a>\n<e/>\n<n null=\"true\"/>"
        );
        assert_eq!(
            render(FragmentFormat::Markdown),
            "## A\n- null\n- {}\n\n## E\n- []\n\n## N\n- null"
        );
        assert_eq!(render(FragmentFormat::Toml), "e = []\n\n[[a]]");
        let nested = json!({"t": {"list": [], "map": {}, "none": null, "s": ""}});
        assert_eq!(
            render_value(&nested, FragmentFormat::Markdown, &FormatOptions::default()).unwrap(),
            "## T\n- **list**: []\n- **map**: {}\n- **none**: null\n- **s**: \"\""
        );
        assert_eq!(
            render_value(&json!(null), FragmentFormat::Xml, &FormatOptions::default()).unwrap(),
            "<value null=\"true\"/>"
        );
    }

    #[test]
    fn write_to_appends_without_a_trailing_newline() {
        let tree = Tree::from_value(&json!({"a": 1})).unwrap();
        let mut out = String::from("before\n");
        tree.write_to(FragmentFormat::Toml, &FormatOptions::default(), &mut out)
            .unwrap();
        assert_eq!(out, "before\na = 1");
    }

    #[test]
    fn paths_quote_odd_keys() {
        let mut path = String::new();
        push_key(&mut path, "config");
        push_key(&mut path, "db-1");
        push_key(&mut path, "a key");
        assert_eq!(path, r#"config.db-1["a key"]"#);
    }
}
