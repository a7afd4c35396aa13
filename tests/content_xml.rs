//! The XML content renderer against the reference's examples, exactly.

use agent_context::content::{ContentFormat, blocks_from_value, render_text};
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
         <li class=\"task-list-item\"><input type=\"checkbox\" checked disabled />Done task</li>\n  \
         <li class=\"task-list-item\"><input type=\"checkbox\" disabled />Pending task</li>\n\
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
}
