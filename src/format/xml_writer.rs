//! XML: one element per key, text escaped and verbatim; an empty container
//! is `<key/>` and a null `<key null="true"/>`.

use super::tree::{Container, Label, Leaf, Slot, TreeWriter};
use crate::render::{EscapeMode, RenderContext, TagSet};
use crate::syntax::xml::is_name;

/// The element that stands in for a key that is not an XML name.
const GENERIC: &str = "item";

pub(super) struct XmlWriter {
    indent: usize,
    tags: TagSet,
}

impl XmlWriter {
    pub(super) fn new(indent: usize) -> Self {
        XmlWriter {
            indent,
            tags: TagSet::default(),
        }
    }

    /// Writes `<tag` or `<item name="…"` after the indentation, plus
    /// `null="true"` for a null; the caller ends the tag.
    fn start_tag(&self, out: &mut String, slot: &Slot<'_>, null: bool) {
        let context = RenderContext::new(EscapeMode::Xml, &self.tags);
        push_spaces(out, slot.depth * self.indent);
        let (tag, name) = element(slot);
        let null = null.then_some("true");
        context.write_open_tag(out, tag, &[("name", name), ("null", null)]);
    }

    fn close_tag(&self, out: &mut String, slot: &Slot<'_>, indented: bool) {
        if indented {
            push_spaces(out, slot.depth * self.indent);
        }
        out.push_str("</");
        out.push_str(element(slot).0);
        out.push_str(">\n");
    }
}

impl TreeWriter for XmlWriter {
    fn leaf(&mut self, out: &mut String, slot: &Slot<'_>, leaf: Leaf<'_>) {
        // An attribute, not the text `null`, so a null differs from "null".
        if leaf == Leaf::Null {
            self.start_tag(out, slot, true);
            out.push_str("/>\n");
            return;
        }
        self.start_tag(out, slot, false);
        out.push('>');
        // Verbatim: a multi-line string is not re-indented, so it parses back
        // unchanged; the closing tag follows its last character.
        RenderContext::new(EscapeMode::Xml, &self.tags).write_body(out, &leaf.text());
        self.close_tag(out, slot, false);
    }

    fn open(&mut self, out: &mut String, slot: &Slot<'_>, _container: Container) {
        self.start_tag(out, slot, false);
        out.push_str(">\n");
    }

    fn empty(&mut self, out: &mut String, slot: &Slot<'_>, _container: Container) {
        self.start_tag(out, slot, false);
        out.push_str("/>\n");
    }

    fn close(&mut self, out: &mut String, slot: &Slot<'_>, _container: Container) {
        self.close_tag(out, slot, true);
    }
}

/// The element name of `slot`, and the `name` attribute when the key itself
/// cannot be one.
fn element<'a>(slot: &Slot<'a>) -> (&'a str, Option<&'a str>) {
    let key = match slot.label {
        Label::Key(key) | Label::Group(key) => key,
        Label::Item { name, .. } => name,
    };
    if is_name(key) {
        (key, None)
    } else {
        (GENERIC, Some(key))
    }
}

fn push_spaces(out: &mut String, count: usize) {
    out.extend(std::iter::repeat_n(' ', count));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::format::{FormatOptions, FragmentFormat, render_fragments, render_value};
    use crate::fragment::{Fragment, fragment, hint, role};

    fn xml(value: serde_json::Value) -> String {
        render_value(&value, FragmentFormat::Xml, &FormatOptions::default()).unwrap()
    }

    #[test]
    fn the_design_example_holds_exactly() {
        let config = fragment("config", [json!({"debug": true, "timeout": 30})]).with(fragment(
            "database",
            [json!({"host": "localhost", "port": 5432})],
        ));
        let out = render_fragments(&[config], FragmentFormat::Xml, &FormatOptions::default());
        assert_eq!(
            out.unwrap(),
            "<config>\n  <debug>true</debug>\n  <timeout>30</timeout>\n  <database>\n    \
             <host>localhost</host>\n    <port>5432</port>\n  </database>\n</config>"
        );
    }

    #[test]
    fn repeated_fragments_come_as_they_are_or_nest_under_the_plural() {
        let context = [role("r"), hint("a"), hint("b")];
        let render = |options: &FormatOptions| {
            render_fragments(&context, FragmentFormat::Xml, options).unwrap()
        };
        assert_eq!(
            render(&FormatOptions::default()),
            "<role>r</role>\n<hint>a</hint>\n<hint>b</hint>"
        );
        assert_eq!(
            render(&FormatOptions::default().with_group_fragments(true)),
            "<role>r</role>\n<hints>\n  <hint>a</hint>\n  <hint>b</hint>\n</hints>"
        );
    }

    #[test]
    fn a_top_level_list_of_one_is_not_wrapped_again() {
        let context = [
            Fragment::new("available_sections", json!(["In /sections."])),
            Fragment::new("config", json!([{"debug": true}])),
            Fragment::new("tags", json!({"tags": ["a"]})),
        ];
        let out = render_fragments(&context, FragmentFormat::Xml, &FormatOptions::default());
        assert_eq!(
            out.unwrap(),
            "<available_sections>In /sections.</available_sections>\n\
             <config>\n  <debug>true</debug>\n</config>\n\
             <tags>\n  <tags>\n    <tag>a</tag>\n  </tags>\n</tags>"
        );
    }

    #[test]
    fn text_is_escaped_and_kept_verbatim() {
        assert_eq!(
            xml(json!({"code": "if a < b && c > d {\n    x\r\n}"})),
            "<code>if a &lt; b &amp;&amp; c &gt; d {\n    x&#13;\n}</code>"
        );
        assert_eq!(xml(json!({"empty": ""})), "<empty></empty>");
        assert_eq!(xml(json!({"nul": "a\u{0}b"})), "<nul>a\u{FFFD}b</nul>");
    }

    #[test]
    fn odd_keys_go_into_a_name_attribute() {
        assert_eq!(
            xml(json!({"my key": 1, "a:b": 2, "1st": 3, "ok-1.x": 4, "\"<&>": 5})),
            "<item name=\"my key\">1</item>\n<item name=\"a:b\">2</item>\n\
             <item name=\"1st\">3</item>\n<ok-1.x>4</ok-1.x>\n<item name=\"&quot;&lt;&amp;>\">5</item>"
        );
    }

    #[test]
    fn list_elements_take_the_singular_of_the_key() {
        assert_eq!(
            xml(json!({"tags": ["a", "b"], "matrix": [[1], [2]]})),
            "<tags>\n  <tag>a</tag>\n  <tag>b</tag>\n</tags>\n<matrix>\n  <item>\n    <item>1</item>\n  \
             </item>\n  <item>\n    <item>2</item>\n  </item>\n</matrix>"
        );
        assert_eq!(xml(json!(7)), "<value>7</value>");
        assert_eq!(xml(json!([1])), "<value>\n  <item>1</item>\n</value>");
    }

    #[test]
    fn names_follow_the_xml_grammar() {
        for name in ["a", "_x", "é", "漢字", "a-b.c", "a\u{300}"] {
            assert!(is_name(name), "{name}");
        }
        for name in ["", "1a", "-a", ".a", "a b", "a:b", "a/b", "\u{300}a"] {
            assert!(!is_name(name), "{name}");
        }
    }
}
