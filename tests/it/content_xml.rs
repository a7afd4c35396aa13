//! The XML content renderer against the reference's examples, exactly,
//! and random trees read back by a real XML parser.

use crate::common::content_trees::{self, Leaf, Switching, text_leaves};
use agent_context::content::{Block, ContentFormat, blocks_from_value, render_text};
use proptest::prelude::*;
use serde_json::{Value, json};

/// `content` (a block or an array of blocks, in the reference's JSON)
/// rendered as XML.
fn xml(content: Value) -> String {
    let blocks = blocks_from_value(content).expect("valid content");
    render_text(&blocks, ContentFormat::Xml.renderer())
}

fn tree(children: Value) -> Value {
    json!({"type": "text", "text": "", "semanticNode": {"children": children}})
}

fn list(structure: Value) -> Value {
    json!({"type": "text", "text": "", "semantic": {"type": "list", "structure": structure}})
}

#[test]
fn hello_world() {
    let hello = tree(json!([
        {"text": "Hello "},
        {"semantic": "strong", "children": [{"text": "world"}]},
    ]));
    assert_eq!(xml(hello), "Hello <strong>world</strong>");
}

#[test]
fn inline_formatting() {
    let cases = [
        (
            json!([{"text": "Text with "}, {"semantic": "strong", "children": [
                {"text": "bold and "}, {"semantic": "em", "children": [{"text": "italic"}]}]}]),
            "Text with <strong>bold and <em>italic</em></strong>",
        ),
        (
            json!([{"text": "Use "}, {"semantic": "code", "text": "console.log()"},
                {"text": " to debug"}]),
            "Use <code>console.log()</code> to debug",
        ),
        (
            json!([{"text": "Plain "}, {"semantic": "strong", "text": "bold"}, {"text": " "},
                {"semantic": "em", "text": "italic"}, {"text": " "},
                {"semantic": "code", "text": "code"}, {"text": " text"}]),
            "Plain <strong>bold</strong> <em>italic</em> <code>code</code> text",
        ),
        (
            json!([{"text": "Use "}, {"semantic": "strong", "children": [
                {"semantic": "code", "text": "npm"}, {"text": " install"}]},
                {"text": " to install packages"}]),
            "Use <strong><code>npm</code> install</strong> to install packages",
        ),
        (
            json!([{"semantic": "paragraph", "children": [{"text": "You have a "},
                {"semantic": "code", "text": "scratchpad"},
                {"text": " tool for taking notes during this conversation."}]}]),
            "<p>You have a <code>scratchpad</code> tool for taking notes during this \
             conversation.</p>",
        ),
    ];
    for (children, expected) in cases {
        assert_eq!(xml(tree(children)), expected);
    }
}

#[test]
fn a_paragraph_block_wraps_its_tree() {
    let block = json!({"type": "text", "text": "", "semantic": {"type": "paragraph"},
        "semanticNode": {"children": [{"text": "This is a paragraph with "},
            {"semantic": "em", "text": "emphasis"}]}});
    assert_eq!(
        xml(block),
        "<p>This is a paragraph with <em>emphasis</em></p>"
    );
}

#[test]
fn headings() {
    let legacy = |level: u8, text: &str| json!({"type": "text", "text": text, "semantic": {"type": "heading", "level": level}});
    assert_eq!(xml(legacy(1, "Title")), "<h1>Title</h1>");
    assert_eq!(xml(legacy(3, "Subtitle")), "<h3>Subtitle</h3>");
    let with_tree = json!({"type": "text", "text": "", "semantic": {"type": "heading", "level": 2},
        "semanticNode": {"children": [{"text": "Title with "},
            {"semantic": "strong", "text": "bold"}]}});
    assert_eq!(xml(with_tree), "<h2>Title with <strong>bold</strong></h2>");
}

#[test]
fn text_and_attributes_are_escaped() {
    let text = "A & B < C > D \"quoted\"";
    let expected = "A &amp; B &lt; C &gt; D &quot;quoted&quot;";
    assert_eq!(xml(json!({"type": "text", "text": text})), expected);
    assert_eq!(xml(tree(json!([{"text": text}]))), expected);
    let link = tree(
        json!([{"semantic": "link", "props": {"href": "/a?b=1&c=\"2\""},
        "text": "<here>"}]),
    );
    assert_eq!(
        xml(link),
        "<a href=\"/a?b=1&amp;c=&quot;2&quot;\">&lt;here&gt;</a>"
    );
    let custom = tree(
        json!([{"semantic": "custom", "props": {"_tagName": "x onload=\"y\""},
        "text": "t"}]),
    );
    assert_eq!(
        xml(custom),
        "<span>t</span>",
        "a tag name that is not a name"
    );
    assert_eq!(
        xml(json!({"type": "code", "language": "c", "text": "if (a < b && c > d) {}"})),
        "<pre><code class=\"language-c\">if (a &lt; b &amp;&amp; c &gt; d) {}</code></pre>"
    );
}

#[test]
fn lists() {
    let plain = list(json!({"ordered": false, "items": ["First", "Second", "Third"]}));
    assert_eq!(
        xml(plain),
        "<ul>\n  <li>First</li>\n  <li>Second</li>\n  <li>Third</li>\n</ul>"
    );
    let tasks = list(json!({"ordered": false, "task": true, "items": [
        {"text": "Done task", "checked": true}, {"text": "Pending task", "checked": false}]}));
    assert_eq!(
        xml(tasks),
        "<ul class=\"task-list\">\n  \
         <li class=\"task-list-item\"><input type=\"checkbox\" checked=\"checked\" disabled=\"disabled\" />Done task</li>\n  \
         <li class=\"task-list-item\"><input type=\"checkbox\" disabled=\"disabled\" />Pending task</li>\n\
         </ul>"
    );
    let nested = list(json!({"ordered": true, "items": ["First",
        {"text": "Third", "nested": {"ordered": false, "items": ["A"]}}]}));
    assert_eq!(
        xml(nested),
        "<ol>\n  <li>First</li>\n  <li>Third\n<ul>\n  <li>A</li>\n</ul></li>\n</ol>"
    );
}

#[test]
fn table() {
    let table = json!({"type": "text", "text": "", "semantic": {"type": "table", "structure": {
        "headers": ["Name", "Value"], "rows": [["Key", "123"]],
        "alignments": ["left", "right"]}}});
    assert_eq!(
        xml(table),
        "<table>
  <thead>
    <tr>
      <th>Name</th>
      <th style=\"text-align: right\">Value</th>
    </tr>
  </thead>
  <tbody>
    <tr>
      <td>Key</td>
      <td style=\"text-align: right\">123</td>
    </tr>
  </tbody>
</table>"
    );
}

#[test]
fn event_block() {
    let event = json!({"type": "user_action", "action": "checkout", "actor": "user",
        "target": "cart", "text": "User initiated checkout"});
    assert_eq!(
        xml(event),
        "<user-action actor=\"user\" action=\"checkout\" target=\"cart\">User initiated \
         checkout</user-action>"
    );
}

#[test]
fn collapsed() {
    let collapsed = json!({"type": "collapsed", "name": "ref:1", "childBlocks": [
        {"type": "text", "text": "Asked about Python", "semanticNode": {"children": [
            {"text": "Asked about "}, {"semantic": "strong", "children": [{"text": "Python"}]}]}},
        {"type": "code", "language": "ts", "text": "function hello() {}"},
    ]});
    assert_eq!(
        xml(collapsed),
        "<collapsed name=\"ref:1\">Asked about <strong>Python</strong>\n\n\
         <pre><code class=\"language-ts\">function hello() {}</code></pre></collapsed>"
    );
    let text = json!({"type": "collapsed", "name": "ref:0",
        "text": "user asked: \"what <is> this & that?\""});
    assert_eq!(
        xml(text),
        "<collapsed name=\"ref:0\">user asked: &quot;what &lt;is&gt; this &amp; \
         that?&quot;</collapsed>"
    );
    let quoted = json!({"type": "collapsed", "name": "ref:\"0\"", "text": "summary"});
    assert!(xml(quoted).contains("name=\"ref:&quot;0&quot;\""));
}

#[test]
fn a_subtree_switches_renderer() {
    let mixed = tree(json!([{"text": "a "},
        {"renderer": "xml", "semantic": "strong", "text": "b"}]));
    let blocks = blocks_from_value(mixed).unwrap();
    // The Markdown renderer hands the subtree to XML.
    let markdown = render_text(&blocks, ContentFormat::Gfm.renderer());
    assert!(markdown.ends_with("<strong>b</strong>"), "{markdown}");
    // The XML renderer writes a Markdown subtree as text: escaped.
    let mixed = tree(json!([{"text": "see "},
        {"renderer": "gfm", "semantic": "strong", "text": "a<b & \"c\""}]));
    let xml = xml(mixed);
    assert_eq!(xml, "see **a\\&lt;b &amp; &quot;c&quot;**");
    let root = format!("<root>{xml}</root>");
    let document = roxmltree::Document::parse(&root).unwrap();
    let text = document.root_element().text();
    assert_eq!(text, Some("see **a\\<b & \"c\"**"));
}

#[test]
fn unknown_fields_and_types_name_their_path() {
    let error = blocks_from_value(json!([{"type": "text", "text": "a"},
        {"type": "collapsed", "name": "n", "childBlocks": [{"type": "chart"}]}]))
    .unwrap_err()
    .to_string();
    assert!(error.contains("$[1].childBlocks[0]"), "{error}");
    assert!(error.contains("chart"), "{error}");
    let error = blocks_from_value(json!({"type": "text", "text": "a", "colour": "red"}))
        .unwrap_err()
        .to_string();
    assert!(error.contains("colour"), "{error}");
    // Inside a tree, the node that fails is named.
    let error = blocks_from_value(tree(json!([{"text": "a"},
        {"semantic": "strong", "children": [{"semantic": "blink"}]}])))
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("$.semanticNode.children[1].children[0].semantic"),
        "{error}"
    );
    let error = blocks_from_value(list(json!({"ordered": "yes", "items": []})))
        .unwrap_err()
        .to_string();
    assert!(error.contains("$.semantic.structure.ordered"), "{error}");
    let misspelt = list(json!({"items": ["a", {"text": "b",
        "nested": {"items": [{"text": "c", "chekced": true}]}}]}));
    let error = blocks_from_value(misspelt).unwrap_err().to_string();
    assert!(
        error.contains("$.semantic.structure.items[1].nested.items[0].chekced"),
        "{error}"
    );
    let table = json!({"type": "text", "text": "", "semantic": {"type": "table",
        "structure": {"headers": ["a"], "rows": [], "alignment": []}}});
    let error = blocks_from_value(table).unwrap_err().to_string();
    assert!(error.contains("$.semantic.structure.alignment"), "{error}");
}

// ---- The invariant: what roxmltree reads back ----

/// What XML holds, as leaves: its text (every text node, less the
/// indentation between list and table rows), and the values written
/// about things (links, media, collapsed names, user actions' fields).
#[derive(Debug, Default, PartialEq)]
struct ReadBack {
    text: String,
    attributes: Vec<String>,
}

impl ReadBack {
    fn attribute(&mut self, value: Option<&str>) {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            self.attributes.push(value.to_owned());
        }
    }

    /// `xml`, which must be well formed, read back.
    fn parse(xml: &str) -> ReadBack {
        let wrapped = format!("<root>{xml}</root>");
        let document = roxmltree::Document::parse(&wrapped)
            .unwrap_or_else(|error| panic!("{error} in {xml:?}"));
        let mut read = ReadBack::default();
        read.element(document.root_element());
        read
    }

    fn element(&mut self, element: roxmltree::Node) {
        let name = element.tag_name().name();
        let layout = matches!(name, "ul" | "ol" | "table" | "thead" | "tbody" | "tr");
        for child in element.children() {
            if let Some(text) = child.text().filter(|_| child.is_text()) {
                let before_list = child
                    .next_sibling()
                    .is_some_and(|s| s.has_tag_name("ul") || s.has_tag_name("ol"));
                match () {
                    _ if layout && text.trim().is_empty() => {}
                    _ if name == "li" && before_list => {
                        self.text.push_str(text.strip_suffix('\n').unwrap_or(text))
                    }
                    _ => self.text.push_str(text),
                }
            } else if child.is_element() {
                self.described(child);
            }
        }
    }

    /// An element's attributes that are leaves, then its content.
    fn described(&mut self, element: roxmltree::Node) {
        let attribute = |name| element.attribute(name);
        match element.tag_name().name() {
            "a" => self.attribute(attribute("href")),
            "img" => {
                self.attribute(attribute("src"));
                self.attribute(attribute("alt"));
            }
            "audio" | "video" => self.attribute(attribute("src")),
            "collapsed" => self.attribute(attribute("name")),
            "user-action" => {
                let fields = [attribute("actor"), attribute("action"), attribute("target")];
                let description = describe(fields);
                // An action without text of its own is described.
                if element.text().unwrap_or_default() == description {
                    return fields.into_iter().for_each(|f| self.attribute(f));
                }
            }
            _ => {}
        }
        self.element(element);
    }

    /// What `block` must read back as.
    fn expected(block: &Block) -> ReadBack {
        let mut read = ReadBack::default();
        if let Block::Collapsed {
            name, child_blocks, ..
        } = block
            && !child_blocks.is_empty()
        {
            read.attribute(Some(&xml_text(name)));
            let children: Vec<ReadBack> = child_blocks.iter().map(ReadBack::expected).collect();
            let texts: Vec<&str> = children.iter().map(|c| c.text.as_str()).collect();
            read.text = texts.join("\n\n");
            read.attributes
                .extend(children.into_iter().flat_map(|c| c.attributes));
            return read;
        }
        for leaf in text_leaves(std::slice::from_ref(block), ContentFormat::Xml) {
            match leaf {
                Leaf::Text(text) | Leaf::Code(text) => read.text.push_str(&xml_text(&text)),
                Leaf::Attribute(value) => read.attribute(Some(&xml_text(&value))),
            }
        }
        read
    }
}

/// `user checkout on cart`, as the renderer describes an action.
fn describe([actor, action, target]: [Option<&str>; 3]) -> String {
    let target = target.map(|t| format!("on {t}"));
    let words = [actor, action, target.as_deref()];
    words.into_iter().flatten().collect::<Vec<_>>().join(" ")
}

/// `text` as XML can hold it: a character it cannot is U+FFFD.
fn xml_text(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' | '\u{20}'..='\u{FFFD}' | '\u{10000}'.. => c,
            _ => '\u{FFFD}',
        })
        .collect()
}

/// Each block alone, and all of them joined, parse and read back as their
/// leaves.
fn check_blocks(blocks: &[Block]) {
    let mut whole = ReadBack::default();
    for (index, block) in blocks.iter().enumerate() {
        let xml = render_text(std::slice::from_ref(block), ContentFormat::Xml.renderer());
        let expected = ReadBack::expected(block);
        assert_eq!(
            ReadBack::parse(&xml),
            expected,
            "{block:?}\nrendered as {xml:?}"
        );
        if index > 0 {
            whole.text.push_str("\n\n");
        }
        whole.text.push_str(&expected.text);
        whole.attributes.extend(expected.attributes);
    }
    let joined = render_text(blocks, ContentFormat::Xml.renderer());
    assert_eq!(ReadBack::parse(&joined), whole, "{joined:?}");
}

proptest! {
    #![proptest_config(content_trees::config())]

    #[test]
    fn xml_reads_back_as_the_tree(blocks in content_trees::blocks(6, Switching::On)) {
        check_blocks(&blocks);
    }
}
