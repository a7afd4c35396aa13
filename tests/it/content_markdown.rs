//! The Markdown renderers: the reference's examples exactly, and random
//! content that pulldown-cmark reads back as the text, list items, table
//! cells, emphasis, code and links it holds.

use crate::common::content_trees::{self, Leaf, Switching, plain_text, text_leaves};
use agent_context::content::{
    Alignment, Block, ContentFormat, List, Node, Rendered, Semantic, SemanticType as S, Structure,
    Table, blocks_from_value, render_blocks, render_text,
};
use proptest::prelude::*;
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use serde_json::{Value, json};

const GFM: ContentFormat = ContentFormat::Gfm;
const CM: ContentFormat = ContentFormat::Commonmark;

fn tree(children: Value) -> Value {
    json!({"type": "text", "text": "", "semanticNode": {"children": children}})
}

fn node(node: Value) -> Value {
    json!({"type": "text", "text": "", "semanticNode": node})
}

fn list(structure: Value) -> Value {
    json!({"type": "text", "text": "", "semantic": {"type": "list", "structure": structure}})
}

fn table(structure: Value) -> Value {
    json!({"type": "text", "text": "", "semantic": {"type": "table", "structure": structure}})
}

fn text(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// Runs `[what, content, GFM, CommonMark]` cases (CommonMark `null`: as
/// GFM): each renders exactly so, and reads back as its blocks.
fn run(cases: Value) {
    for case in cases.as_array().expect("cases") {
        let blocks = blocks_from_value(case[1].clone()).expect("valid content");
        let commonmark = if case[3].is_null() {
            &case[2]
        } else {
            &case[3]
        };
        for (format, expected) in [(GFM, &case[2]), (CM, commonmark)] {
            check_blocks(&blocks, format);
            let rendered = render_text(&blocks, format.renderer());
            assert_eq!(
                rendered,
                expected.as_str().unwrap(),
                "{} as {format:?}",
                case[0]
            );
        }
    }
}

#[test]
#[rustfmt::skip]
fn reference_examples() {
    run(json!([
        ["hello world", tree(json!([{"text": "Hello "}, {"semantic": "strong", "children": [{"text": "world"}]}])), "Hello **world**", null],
        ["mixed inline formatting", tree(json!([{"text": "Use the "}, {"semantic": "code", "text": "scratchpad"},
            {"text": " tool to take notes. You can "}, {"semantic": "strong", "text": "emphasize"},
            {"text": " important points or add "}, {"semantic": "em", "text": "subtle emphasis"}, {"text": " where needed."}])),
            "Use the `scratchpad` tool to take notes. You can **emphasize** important points or add *subtle emphasis* where needed.", null],
        ["nested emphasis", tree(json!([{"text": "Text with "}, {"semantic": "strong", "children": [
            {"text": "bold and "}, {"semantic": "em", "children": [{"text": "italic"}]}]}])), "Text with **bold and *italic***", null],
        ["code", tree(json!([{"text": "Use "}, {"semantic": "code", "text": "console.log()"}, {"text": " to debug"}])),
            "Use `console.log()` to debug", null],
        ["plain and styled", tree(json!([{"text": "Plain "}, {"semantic": "strong", "text": "bold"}, {"text": " "},
            {"semantic": "em", "text": "italic"}, {"text": " "}, {"semantic": "code", "text": "code"}, {"text": " text"}])),
            "Plain **bold** *italic* `code` text", null],
        ["code in strong", tree(json!([{"text": "Use "}, {"semantic": "strong", "children": [{"semantic": "code", "text": "npm"},
            {"text": " install"}]}, {"text": " to install packages"}])), "Use **`npm` install** to install packages", null],
        ["paragraph node", tree(json!([{"semantic": "paragraph", "children": [{"text": "You have a "},
            {"semantic": "code", "text": "scratchpad"}, {"text": " tool for taking notes during this conversation."}]}])),
            "You have a `scratchpad` tool for taking notes during this conversation.", null],
        ["paragraph block", {"type": "text", "text": "", "semantic": {"type": "paragraph"}, "semanticNode": {"children": [
            {"text": "This is a paragraph with "}, {"semantic": "em", "text": "emphasis"}]}}, "This is a paragraph with *emphasis*", null],
        ["heading 1", {"type": "text", "text": "Title", "semantic": {"type": "heading", "level": 1}}, "# Title", null],
        ["heading 2", {"type": "text", "text": "Subtitle", "semantic": {"type": "heading", "level": 2}}, "## Subtitle", null],
        ["heading 3", {"type": "text", "text": "Subtitle", "semantic": {"type": "heading", "level": 3}}, "### Subtitle", null],
        ["heading with a tree", {"type": "text", "text": "", "semantic": {"type": "heading", "level": 2}, "semanticNode": {"children": [
            {"text": "Title with "}, {"semantic": "strong", "text": "bold"}]}}, "## Title with **bold**", null],
        ["image node", tree(json!([{"text": "Check this: "}, {"semantic": "image", "props": {"src": "https://example.com/photo.jpg", "alt": "A photo"}}])),
            "Check this: ![A photo](https://example.com/photo.jpg)", null],
        ["audio node", tree(json!([{"text": "Listen here: "}, {"semantic": "audio", "props": {"src": "https://example.com/sound.mp3"}}])),
            "Listen here: [Audio: https://example.com/sound.mp3]", null],
        ["video node", tree(json!([{"text": "Watch: "}, {"semantic": "video", "props": {"src": "https://example.com/video.mp4"}}])),
            "Watch: [Video: https://example.com/video.mp4]", null],
        ["diagram", tree(json!([{"text": "See the diagram: "}, {"semantic": "image", "props": {"src": "https://example.com/diagram.png", "alt": "Diagram"}}])),
            "See the diagram: ![Diagram](https://example.com/diagram.png)", null],
        ["leaf", node(json!({"text": "Hello world"})), "Hello world", null],
        ["strong", node(json!({"semantic": "strong", "text": "bold"})), "**bold**", null],
        ["em", node(json!({"semantic": "em", "text": "italic"})), "*italic*", null],
        ["code node", node(json!({"semantic": "code", "text": "const x = 1"})), "`const x = 1`", null],
        ["strikethrough", node(json!({"semantic": "strikethrough", "text": "deleted"})), "~~deleted~~", "<del>deleted</del>"],
        ["link", node(json!({"semantic": "link", "props": {"href": "https://example.com"}, "text": "Click here"})),
            "[Click here](https://example.com)", null],
        ["image", node(json!({"semantic": "image", "props": {"alt": "Logo", "src": "/logo.png"}})), "![Logo](/logo.png)", null],
        ["blockquote", node(json!({"semantic": "blockquote", "text": "Line 1\nLine 2"})), "> Line 1\n> Line 2", null],
        ["strong children", node(json!({"semantic": "strong", "children": [{"text": "nested "}, {"text": "content"}]})),
            "**nested content**", null],
        ["legacy rule", {"type": "text", "text": "", "semantic": {"type": "horizontal-rule"}}, "\n---\n", null],
        ["legacy break", {"type": "text", "text": "", "semantic": {"type": "line-break"}}, "\n", null],
        ["code block", {"type": "code", "language": "typescript", "text": "const x = 1;"}, "```typescript\nconst x = 1;\n```", null],
        ["json block", {"type": "json", "data": {"key": "value"}}, "```json\n{\n  \"key\": \"value\"\n}\n```", null],
        ["table", table(json!({"headers": ["Name", "Value"], "rows": [["Key", "123"]], "alignments": ["left", "right"]})),
            "| Name | Value |\n| ---- | ----: |\n| Key  |   123 |", "```\n| Name | Value |\n| ---- | ----: |\n| Key  |   123 |\n```"],
        ["table without alignments", table(json!({"headers": ["Name", "Age"], "rows": [["Alice", "30"], ["Bob", "25"]]})),
            "| Name  | Age |\n| ----- | --- |\n| Alice | 30  |\n| Bob   | 25  |",
            "```\n| Name  | Age |\n| ----- | --- |\n| Alice | 30  |\n| Bob   | 25  |\n```"],
        ["three alignments", table(json!({"headers": ["Left", "Center", "Right"], "rows": [["1", "2", "3"]],
            "alignments": ["left", "center", "right"]})), "| Left | Center | Right |\n| ---- | :----: | ----: |\n| 1    |   2    |     3 |",
            "```\n| Left | Center | Right |\n| ---- | :----: | ----: |\n| 1    |   2    |     3 |\n```"],
        ["nested list", list(json!({"ordered": true, "items": ["First", "Second", {"text": "Third", "nested": {"ordered": false, "items": ["A", "B"]}}]})),
            "1. First\n2. Second\n3. Third\n   - A\n   - B", null],
        ["bullets", list(json!({"ordered": false, "items": ["Item 1", "Item 2", "Item 3"]})), "- Item 1\n- Item 2\n- Item 3", null],
        ["numbers", list(json!({"ordered": true, "items": ["First", "Second", "Third"]})), "1. First\n2. Second\n3. Third", null],
        ["task list", list(json!({"ordered": false, "task": true, "items": [{"text": "Done task", "checked": true},
            {"text": "Pending task", "checked": false}, {"text": "Also pending"}]})),
            "- [x] Done task\n- [ ] Pending task\n- [ ] Also pending", "- ✓ Done task\n- ○ Pending task\n- ○ Also pending"],
        ["two tasks", list(json!({"ordered": false, "task": true, "items": [{"text": "Complete", "checked": true}, {"text": "Incomplete"}]})),
            "- [x] Complete\n- [ ] Incomplete", "- ✓ Complete\n- ○ Incomplete"],
        ["event", {"type": "user_action", "action": "checkout", "actor": "user", "target": "cart"}, "User checkout on cart", null],
        ["event with actor", {"type": "user_action", "actor": "User", "action": "clicked", "target": "button"}, "User clicked on button", null],
        ["collapsed", {"type": "collapsed", "name": "ref:1", "childBlocks": [{"type": "text", "text": "Asked about Python", "semanticNode": {"children": [
            {"text": "Asked about "}, {"semantic": "strong", "children": [{"text": "Python"}]}]}}, {"type": "code", "language": "ts", "text": "function hello() {}"}]},
            // The reference glues the tags to the blocks ("```</collapsed>"),
            // which leaves the fence open: the blocks stand between blank lines.
            "<collapsed name=\"ref:1\">\n\nAsked about **Python**\n\n```ts\nfunction hello() {}\n```\n\n</collapsed>", null],
        ["collapsed website", {"type": "collapsed", "name": "ref:1", "childBlocks": [tree(json!([{"text": "User asked about "},
            {"semantic": "strong", "text": "Python"}, {"text": " and "}, {"semantic": "link", "props": {"href": "/docs"}, "text": "documentation"}]))]},
            "<collapsed name=\"ref:1\">\n\nUser asked about **Python** and [documentation](/docs)\n\n</collapsed>", null],
        ["collapsed text", {"type": "collapsed", "name": "ref:0", "text": "[file contents]"}, "<collapsed name=\"ref:0\">[file contents]</collapsed>", null],
        ["collapsed escaped", {"type": "collapsed", "name": "ref:0", "text": "user asked: \"what <is> this & that?\""},
            "<collapsed name=\"ref:0\">user asked: &quot;what &lt;is&gt; this &amp; that?&quot;</collapsed>", null],
        ["collapsed quoted name", {"type": "collapsed", "name": "ref:\"0\"", "text": "x"}, "<collapsed name=\"ref:&quot;0&quot;\">x</collapsed>", null],
        ["collapsed no name", {"type": "collapsed", "name": "", "text": "summary"}, "<collapsed name=\"\">summary</collapsed>", null],
    ]));
}

#[test]
fn media_stay_native_and_collapsed_blocks_stand_alone() {
    let image = json!({"type": "image", "altText": "A photo", "source": {"type": "url", "url": "https://example.com/photo.jpg"}});
    let blocks = blocks_from_value(image).unwrap();
    let native = render_blocks(&blocks, GFM.renderer());
    assert_eq!(native, [Rendered::Native(Box::new(blocks[0].clone()))]);
    assert_eq!(
        render_text(&blocks, GFM.renderer()),
        "![A photo](https://example.com/photo.jpg)"
    );
    let two = json!([text("visible question"), {"type": "collapsed", "name": "img:1", "text": "[screenshot]"}]);
    let blocks = blocks_from_value(two).unwrap();
    let expected = [
        "visible question",
        "<collapsed name=\"img:1\">[screenshot]</collapsed>",
    ];
    assert_eq!(
        render_blocks(&blocks, GFM.renderer()),
        expected.map(|t| Rendered::Text(t.into()))
    );
}

#[test]
#[rustfmt::skip]
fn text_never_becomes_markup() {
    run(json!([
        ["block starts", text("# h\n- a\n+ b\n1. c\n2) d\n> q\n---\n===\n~~~\n    code"),
            "\\# h\n\\- a\n\\+ b\n1\\. c\n2\\) d\n\\> q\n\\---\n\\===\n\\~\\~\\~\ncode", "\\# h\n\\- a\n\\+ b\n1\\. c\n2\\) d\n\\> q\n\\---\n\\===\n\\~~~\ncode"],
        ["emphasis and code", text("a *b* _c_ `d` snake_case"), "a \\*b\\* \\_c\\_ \\`d\\` snake_case", null],
        ["links", text("[e](f) ![g](h) [i]: j"), "\\[e\\](f) ![g\\](h) [i\\]: j", null],
        ["tags and entities", text("<b> <http://x> a < b &amp; AT&T \\* ~~s~~ a|b"),
            "\\<b> \\<http://x> a < b \\&amp; AT&T \\\\\\* \\~\\~s\\~\\~ a\\|b", "\\<b> \\<http://x> a < b \\&amp; AT&T \\\\\\* ~~s~~ a|b"],
        ["prose stays as it is", text("first #1 - 2 + 3 = 5!"), "first #1 - 2 + 3 = 5!", null],
        ["markers split across leaves", tree(json!([{"text": "1"}, {"text": ". x\n-"}, {"text": " y"}, {"text": "wow!"},
            {"semantic": "link", "props": {"href": "/a"}, "text": "a"}, {"semantic": "audio", "props": {"src": "s"}}, {"text": "(no link)"}])),
            "1\\. x\n\\- ywow\\![a](/a)[Audio: s]\\(no link)", null],
        ["event text", {"type": "user_action", "action": "a", "text": "User initiated *checkout*"}, "User initiated \\*checkout\\*", null],
        ["heading node", tree(json!([{"text": "intro"}, {"semantic": "heading", "text": "Part #"}])), "intro\n\n# Part \\#", null],
        ["legacy heading", {"type": "text", "text": "T", "semantic": {"type": "heading"}}, "## T", null],
        ["hostile table", table(json!({"headers": [], "rows": [["a|b", "*c*\nd"], ["e"]]})),
            "|      |            |\n| ---- | ---------- |\n| a\\|b | \\*c\\*<br>d |\n| e    |            |",
            "```\n|      |        |\n| ---- | ------ |\n| a\\|b | *c*\\nd |\n| e    |        |\n```"],
        ["commonmark table", table(json!({"headers": ["Name", "Value"], "rows": [["K|y", "1\\2\n3"]], "alignments": ["left", "right"]})),
            "| Name |    Value |\n| ---- | -------: |\n| K\\|y | 1\\2<br>3 |", "```\n| Name |   Value |\n| ---- | ------: |\n| K\\|y | 1\\\\2\\n3 |\n```"],
        ["hostile list", list(json!({"ordered": false, "items": ["- a\n# b", "[ ] c", ""]})), "- \\- a\n  \\# b\n- \\[ ] c\n-", null],
        ["an empty first nested item", list(json!({"ordered": false, "items": [{"text": "*", "nested": {"ordered": false, "items": [""]}}]})),
            "- \\*\n\n  -", null],
        ["no-break spaces are text", tree(json!([{"text": "---\u{a0}\n"}, {"semantic": "heading", "text": "\u{a0}#"}])),
            "---\u{a0}\n\n# \u{a0}#", null],
        ["an event without words", {"type": "user_action", "action": "", "actor": ""}, "User action", null],
        ["empty task", list(json!({"ordered": false, "task": true, "items": [{"text": "Done", "checked": true}, ""]})),
            "- [x] Done\n- [ ] ", "- ✓ Done\n- ○ "],
        ["fences outgrow backticks", {"type": "code", "text": "```\n`` ````"}, "`````\n```\n`` ````\n`````", null],
        ["code spans", tree(json!([{"semantic": "code", "text": "a``b"}, {"semantic": "code", "text": "`x"}])), "```a``b``` `` `x ``", null],
        ["html forms", tree(json!([{"semantic": "mark", "text": "m"}, {"semantic": "underline", "text": "u"}, {"semantic": "subscript", "text": "2"},
            {"semantic": "quote", "text": "q"}, {"semantic": "citation", "text": "c"}, {"semantic": "keyboard", "text": "K"}])),
            "<mark>m</mark><u>u</u><sub>2</sub>\"q\"*c*`K`", null],
        ["breaks and rules", tree(json!([{"text": "a"}, {"semantic": "line-break"}, {"text": "b"}, {"semantic": "horizontal-rule"}, {"text": "c"}])),
            "a  \nb\n\n---\n\nc", null],
        ["destinations", tree(json!([{"semantic": "link", "props": {"href": "a b(c)"}, "text": "t"}, {"text": " "},
            {"semantic": "link", "props": {"href": "x)y\\z&amp;"}, "text": "u"}, {"semantic": "link", "props": {"href": ""}, "text": " v"}])),
            "[t](<a b\\(c\\)>) [u](x\\)y\\\\z\\&amp;) v", null],
        ["links do not nest", tree(json!([{"semantic": "link", "props": {"href": "/a"}, "children": [{"text": "[x] "},
            {"semantic": "link", "props": {"href": "/b"}, "text": "inner"}]}])), "[\\[x\\] inner](/a)", null],
    ]));
}

#[test]
#[rustfmt::skip]
fn emphasis_falls_back_to_html_where_delimiters_cannot_stand() {
    run(json!([
        ["punctuation in, letters out", tree(json!([{"text": "a"}, {"semantic": "strong", "text": "(b)"}, {"text": "c"}])),
            "a<strong>(b)</strong>c", null],
        ["spaces move out", tree(json!([{"semantic": "em", "text": " padded "}, {"text": "x"}])), "*padded* x", null],
        ["once", node(json!({"semantic": "em", "children": [{"semantic": "em", "text": "once"}]})), "*once*", null],
        ["side by side", tree(json!([{"semantic": "strong", "text": "a"}, {"semantic": "strong", "text": "b"}])),
            "<strong>a</strong>**b**", null],
        ["nothing to emphasize", tree(json!([{"semantic": "strong", "text": "   "}, {"text": "x"}])), "x", null],
        ["no spaces between words", tree(json!([{"text": "日本"}, {"semantic": "em", "text": "「語」"}, {"text": "だ"}])),
            "日本<em>「語」</em>だ", null],
    ]));
}

#[test]
fn a_subtree_switches_renderer() {
    let mixed = json!([{"text": "see "}, {"semantic": "strong", "renderer": "xml", "text": "a<b"}]);
    let blocks = blocks_from_value(tree(mixed)).unwrap();
    let rendered = render_text(&blocks, GFM.renderer());
    assert_eq!(rendered, "see <strong>a&lt;b</strong>");
}

/// A subtree in the other Markdown flavour is written in the document's:
/// its text stays text, and it stays inside what holds it.
#[test]
fn a_subtree_in_another_flavour_is_written_in_the_documents() {
    let strike = tree(json!([{"text": "a "}, {"renderer": "commonmark", "text": "~~gone~~"}]));
    let strike = blocks_from_value(strike).unwrap();
    assert_eq!(render_text(&strike, GFM.renderer()), "a \\~\\~gone\\~\\~");
    let heading = json!({"type": "text", "text": "", "semantic": {"type": "heading", "level": 2},
        "semanticNode": {"renderer": "commonmark", "text": "a\n\nb"}});
    let heading = blocks_from_value(heading).unwrap();
    assert_eq!(render_text(&heading, GFM.renderer()), "## a b");
    let strong = tree(json!([{"text": "a "},
        {"renderer": "commonmark", "semantic": "strong", "text": "(b)"}, {"text": "c"}]));
    let strong = blocks_from_value(strong).unwrap();
    assert_eq!(
        render_text(&strong, GFM.renderer()),
        "a <strong>(b)</strong>c"
    );
}

/// `<` escaped wherever a tag, a comment or an autolink could start.
#[test]
fn autolinks_stay_text() {
    let blocks =
        blocks_from_value(json!({"type": "text", "text": "mail <1@b.co> or <+x@y.z>, 1 < 2"}))
            .unwrap();
    let rendered = render_text(&blocks, GFM.renderer());
    assert_eq!(rendered, "mail \\<1@b.co> or \\<+x@y.z>, 1 < 2");
}

/// Spaces before a newline are dropped: two would be a hard break.
#[test]
fn trailing_spaces_make_no_hard_break() {
    let blocks = blocks_from_value(json!({"type": "text", "text": "a  \nb\t \nc"})).unwrap();
    assert_eq!(render_text(&blocks, GFM.renderer()), "a\nb\nc");
}

/// A child that starts with a newline trims the spaces its sibling left,
/// before where it began: a random tree found the joint checked past the
/// text's end.
#[test]
fn a_newline_after_spaces_in_nested_emphasis_renders() {
    let blocks = blocks_from_value(json!({
        "type": "text", "text": "", "semantic": {"type": "paragraph"},
        "semanticNode": {"semantic": "strong", "children": [{"semantic": "strong", "children": [
            {"text": "  "}, {"text": "\n"}, {"text": "]"}, {"text": "  "}, {"text": "\n(x)"}
        ]}]}
    }))
    .unwrap();
    for format in [GFM, CM] {
        check_blocks(&blocks, format);
    }
}

/// An XML subtree is inline HTML on one line whose text a Markdown reader
/// reads as written: what Markdown would take as markup is a character
/// reference.
#[test]
fn an_xml_subtree_is_html_whose_text_is_no_markdown() {
    let hostile = "*a* _b_ `c` [d](e) ~~f~~ | g \\\n# h\n\n- i &amp; <j>";
    let cases = [
        json!([{"text": "see "}, {"semantic": "em", "renderer": "xml", "text": hostile}]),
        json!([{"renderer": "xml", "text": "1. x"}, {"semantic": "strong", "text": " y"}]),
        json!([{"renderer": "xml", "text": "# x"}]),
        json!([{"renderer": "xml", "text": " # x"}]),
        json!([{"renderer": "xml", "text": "    code"}]),
        json!([{"text": "1"}, {"renderer": "xml", "text": ". x"}]),
        json!([{"renderer": "xml", "semantic": "paragraph", "text": "a"}, {"text": "x*y_"}]),
        json!([{"renderer": "xml", "semantic": "horizontal-rule"}, {"text": "x*y_"}]),
    ];
    let expected = [
        format!("see {hostile}"),
        "1. x y".to_owned(),
        "# x".to_owned(),
        " # x".to_owned(),
        "    code".to_owned(),
        "1. x".to_owned(),
        "ax*y_".to_owned(),
        "x*y_".to_owned(),
    ];
    for (case, expected) in cases.into_iter().zip(expected) {
        let blocks = blocks_from_value(tree(case)).unwrap();
        let rendered = render_text(&blocks, GFM.renderer());
        assert!(!rendered.contains('\n'), "{rendered:?}");
        let mut text = String::new();
        for event in Parser::new_ext(&rendered, Options::all()) {
            match event {
                Event::Text(t) => text.push_str(&t),
                Event::InlineHtml(_) => {}
                Event::Start(Tag::Paragraph | Tag::Strong) => {}
                Event::End(TagEnd::Paragraph | TagEnd::Strong) => {}
                other => panic!("{other:?} in {rendered:?}"),
            }
        }
        assert_eq!(text, expected, "{rendered:?}");
    }
}

// ---- The invariant: what pulldown-cmark reads back ----

const CODE: u8 = 8;

/// What Markdown means, as far as a tree can say it. Text is compared
/// without whitespace (Markdown drops indentation and trailing spaces and
/// makes newlines soft breaks), every other character in order with its
/// emphasis (bits: strong 1, em 2, strikethrough 4, code 8); cells with
/// whitespace runs collapsed to a space.
#[derive(Debug, Default, PartialEq)]
struct Model {
    text: Vec<(char, u8)>,
    /// The rest in document order: list items (at their end, with their own
    /// text), code blocks, links and images, headings, rules, tables, and
    /// what the renderer never means to write (raw HTML, indented code).
    facts: Vec<String>,
}

impl Model {
    fn extend(&mut self, other: Model) {
        self.text.extend(other.text);
        self.facts.extend(other.facts);
    }
}

fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn no_space(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// `markdown` read by pulldown-cmark (GFM: tables, task lists and
/// strikethrough on; CommonMark: no extensions), and every non-whitespace
/// character it holds, code and cells included.
fn read(markdown: &str, format: ContentFormat) -> (Model, String) {
    let options = match format {
        GFM => Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS | Options::ENABLE_STRIKETHROUGH,
        _ => Options::empty(),
    };
    let mut reader = Reader::default();
    Parser::new_ext(markdown, options).for_each(|event| reader.event(event));
    (reader.model, reader.all)
}

#[derive(Default)]
struct Reader {
    model: Model,
    all: String,
    /// How many strong, em and strikethrough spans are open.
    open: [i32; 3],
    depth: usize,
    items: Vec<(usize, Option<bool>, String)>,
    code: Option<(String, String)>,
    cell: Option<String>,
    table: (Vec<String>, Vec<Vec<String>>),
}

impl Reader {
    fn text(&mut self, text: &str, code: u8) {
        self.all.push_str(&no_space(text));
        if let Some(target) = self.code.as_mut().map(|c| &mut c.1).or(self.cell.as_mut()) {
            return target.push_str(text);
        }
        let styles = (0..3)
            .filter(|&i| self.open[i] > 0)
            .map(|i| 1 << i)
            .sum::<u8>()
            | code;
        self.model
            .text
            .extend(no_space(text).chars().map(|c| (c, styles)));
        if let Some(item) = self.items.last_mut() {
            item.2.push_str(&no_space(text));
        }
    }

    fn event(&mut self, event: Event) {
        let facts = &mut self.model.facts;
        match event {
            Event::Start(Tag::Strong) | Event::End(TagEnd::Strong) => self.open[0] += delta(&event),
            Event::Start(Tag::Emphasis) | Event::End(TagEnd::Emphasis) => {
                self.open[1] += delta(&event)
            }
            Event::Start(Tag::Strikethrough) | Event::End(TagEnd::Strikethrough) => {
                self.open[2] += delta(&event)
            }
            Event::Text(text) => self.text(&text, 0),
            Event::Code(text) => self.text(&text, CODE),
            Event::SoftBreak | Event::HardBreak => self.text(" ", 0),
            Event::InlineHtml(html) => self.html(&html),
            // A collapsed block's tags, each alone on its line.
            Event::Html(html)
                if html.starts_with("<collapsed name=\"") || html.trim_end() == "</collapsed>" => {}
            Event::Start(Tag::CodeBlock(kind)) => {
                let info = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => "(indented)".to_owned(),
                };
                self.code = Some((info, String::new()));
            }
            Event::End(TagEnd::CodeBlock) => {
                facts.push(format!("code {:?}", self.code.take().unwrap()))
            }
            Event::Start(Tag::Heading { level, .. }) => facts.push(format!("{level}")),
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                facts.push(format!("link {:?}", dest_url.to_string()))
            }
            Event::Start(Tag::List(_)) | Event::End(TagEnd::List(_)) => {
                self.depth = (self.depth as i32 + delta(&event)) as usize
            }
            Event::Start(Tag::Item) => self.items.push((self.depth - 1, None, String::new())),
            Event::End(TagEnd::Item) => facts.push(format!("item {:?}", self.items.pop().unwrap())),
            Event::TaskListMarker(checked) => self.items.last_mut().unwrap().1 = Some(checked),
            Event::Start(Tag::Table(aligns)) => {
                let names = aligns.iter().map(|a| format!("{a:?}").to_lowercase());
                self.table = (names.collect(), Vec::new());
            }
            Event::End(TagEnd::Table) => {
                facts.push(format!("table {:?}", std::mem::take(&mut self.table)))
            }
            Event::Start(Tag::TableHead | Tag::TableRow) => self.table.1.push(Vec::new()),
            Event::Start(Tag::TableCell) => self.cell = Some(String::new()),
            Event::End(TagEnd::TableCell) => {
                let cell = normalize(&self.cell.take().unwrap());
                self.table.1.last_mut().unwrap().push(cell);
            }
            Event::Rule => facts.push("rule".into()),
            Event::Start(Tag::Paragraph | Tag::BlockQuote(_) | Tag::HtmlBlock) | Event::End(_) => {}
            other => facts.push(format!("stray {other:?}")),
        }
    }

    fn html(&mut self, html: &str) {
        let delta = if html.starts_with("</") { -1 } else { 1 };
        match html.trim_start_matches("</").trim_start_matches('<') {
            "strong>" => self.open[0] += delta,
            "em>" => self.open[1] += delta,
            "del>" => self.open[2] += delta,
            "br>" => self.text(" ", 0),
            "mark>" | "u>" | "sub>" | "sup>" | "small>" | "collapsed>" => {}
            _ if html.starts_with("<collapsed name=\"") => {}
            _ => self.model.facts.push(format!("stray html {html:?}")),
        }
    }
}

fn delta(event: &Event) -> i32 {
    if matches!(event, Event::Start(_)) {
        1
    } else {
        -1
    }
}

/// Where the renderer may open blocks (`block`), and what is open around a
/// node: emphasis bits, a link's text.
#[derive(Clone, Copy)]
struct Cx {
    block: bool,
    styles: u8,
    label: bool,
}

const BLOCK: Cx = Cx {
    block: true,
    styles: 0,
    label: false,
};

/// The [`Model`] blocks must read back as, from their trees.
struct Expect {
    model: Model,
    gfm: bool,
    item: Option<String>,
}

impl Expect {
    fn new(format: ContentFormat) -> Expect {
        Expect {
            model: Model::default(),
            gfm: format == GFM,
            item: None,
        }
    }

    fn chars(&mut self, text: &str, styles: u8) {
        self.model
            .text
            .extend(no_space(text).chars().map(|c| (c, styles)));
        if let Some(item) = &mut self.item {
            item.push_str(&no_space(text));
        }
    }

    fn code(&mut self, info: &str, text: &str) {
        let info = info.split_whitespace().collect::<Vec<_>>().join(" ");
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let end = if text.is_empty() || text.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        self.model
            .facts
            .push(format!("code {:?}", (info, format!("{text}{end}"))));
    }

    fn link(&mut self, href: &str) {
        self.model.facts.push(format!("link {href:?}"));
    }

    fn block(&mut self, block: &Block) {
        match block {
            Block::Text {
                text,
                semantic_node,
                semantic,
            } => self.text_block(text, semantic_node.as_ref(), semantic.as_ref()),
            Block::Code { language, text } => self.code(language.as_deref().unwrap_or(""), text),
            Block::Json { data, .. } => {
                self.code("json", &serde_json::to_string_pretty(data).unwrap())
            }
            Block::Image(media) => {
                self.link(&media.source.href());
                self.chars(media.alt_text.as_deref().unwrap_or(""), 0);
            }
            Block::Audio(media) => self.chars(&format!("[Audio: {}]", media.source.href()), 0),
            Block::Video(media) => self.chars(&format!("[Video: {}]", media.source.href()), 0),
            Block::UserAction {
                action,
                actor,
                target,
                text,
            } => {
                let text = text.as_deref().filter(|t| !t.trim().is_empty());
                let actor = actor
                    .as_deref()
                    .filter(|a| !a.eq_ignore_ascii_case("user"))
                    .unwrap_or("User");
                let on = target.as_ref().map(|t| format!("on {t}"));
                let parts = [Some(actor), Some(action.as_str()), on.as_deref()]
                    .into_iter()
                    .flatten();
                let sentence = parts
                    .filter(|p| !p.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ");
                let sentence = if sentence.is_empty() {
                    "User action"
                } else {
                    &sentence
                };
                self.chars(text.unwrap_or(sentence), 0)
            }
            other => panic!("no model for {other:?}"),
        }
    }

    fn text_block(&mut self, text: &str, node: Option<&Node>, semantic: Option<&Semantic>) {
        let kind = semantic.map(|s| s.kind);
        if kind == Some(S::Preformatted) || semantic.and_then(|s| s.preformatted) == Some(true) {
            return self.code("", &node.map_or_else(|| text.to_owned(), plain_text));
        }
        if let (Some(Structure::List(list)), Some(S::List)) =
            (semantic.and_then(|s| s.structure.as_ref()), kind)
        {
            return self.list(list, 0);
        }
        match (node, semantic) {
            (Some(node), Some(s)) if s.kind == S::Heading => {
                self.model
                    .facts
                    .push(format!("h{}", s.level.unwrap_or(1).clamp(1, 6)));
                self.node(
                    node,
                    Cx {
                        block: false,
                        ..BLOCK
                    },
                );
            }
            (Some(node), _) => self.node(node, BLOCK),
            (None, Some(s)) => match s.kind {
                S::LineBreak => {}
                S::HorizontalRule => self.model.facts.push("rule".into()),
                S::Heading => {
                    self.model
                        .facts
                        .push(format!("h{}", s.level.unwrap_or(2).clamp(1, 6)));
                    self.chars(text, 0);
                }
                S::Image | S::Audio | S::Video | S::Custom | S::ListItem | S::List | S::Table => {
                    self.chars(text, 0)
                }
                kind => {
                    let mut node = Node::text(text);
                    node.semantic = Some(kind);
                    node.props
                        .extend(s.href.as_ref().map(|href| ("href".to_owned(), json!(href))));
                    self.node(&node, BLOCK);
                }
            },
            (None, None) => self.chars(text, 0),
        }
    }

    fn list(&mut self, list: &List, depth: usize) {
        for item in &list.items {
            let task = (list.task && self.gfm).then(|| item.checked());
            self.item = Some(String::new());
            if list.task && !self.gfm {
                self.chars(if item.checked() { "✓" } else { "○" }, 0);
            }
            self.chars(item.text(), 0);
            let own = self.item.take().unwrap();
            if let Some(nested) = item.nested() {
                self.list(nested, depth + 1);
            }
            self.model
                .facts
                .push(format!("item {:?}", (depth, task, own)));
        }
    }

    fn node(&mut self, node: &Node, cx: Cx) {
        let inline = Cx { block: false, ..cx };
        let styled = |style: u8| Cx {
            styles: cx.styles | style,
            ..inline
        };
        let src = node.prop("src").unwrap_or_default();
        match node.semantic {
            Some(S::Strong) => self.content(node, styled(1)),
            Some(S::Em | S::Citation | S::Variable) => self.content(node, styled(2)),
            Some(S::Strikethrough) => self.content(node, styled(4)),
            Some(S::Mark | S::Underline | S::Subscript | S::Superscript | S::Small) => {
                self.content(node, inline)
            }
            Some(S::Quote) => {
                self.chars("\"", cx.styles);
                self.content(node, inline);
                self.chars("\"", cx.styles);
            }
            Some(S::Preformatted) if cx.block => self.code("", &plain_text(node)),
            Some(S::Code | S::Keyboard | S::Preformatted) => {
                self.chars(&plain_text(node), cx.styles | CODE)
            }
            Some(S::Link) => match node.prop("href").filter(|h| !h.is_empty() && !cx.label) {
                Some(href) => {
                    self.link(href);
                    self.content(
                        node,
                        Cx {
                            label: true,
                            ..inline
                        },
                    );
                }
                None => self.content(node, cx),
            },
            Some(S::Image) => {
                self.link(src);
                self.chars(node.prop("alt").unwrap_or_default(), cx.styles);
            }
            Some(S::Audio) => self.chars(&format!("[Audio: {src}]"), cx.styles),
            Some(S::Video) => self.chars(&format!("[Video: {src}]"), cx.styles),
            Some(S::Heading) if cx.block => {
                let level = node.props.get("level").and_then(Value::as_u64).unwrap_or(1);
                self.model.facts.push(format!("h{}", level.clamp(1, 6)));
                self.content(node, inline);
            }
            Some(S::HorizontalRule) if cx.block => self.model.facts.push("rule".into()),
            Some(S::LineBreak | S::HorizontalRule) => {}
            _ => self.content(node, cx),
        }
    }

    fn content(&mut self, node: &Node, cx: Cx) {
        match &node.children[..] {
            [] => self.chars(node.text.as_deref().unwrap_or_default(), cx.styles),
            children => children.iter().for_each(|child| self.node(child, cx)),
        }
    }
}

/// The invariant. Each block alone reads back as its tree says and holds
/// its text leaves in order; all of them joined read back as one after
/// the other.
fn check_blocks(blocks: &[Block], format: ContentFormat) {
    let mut whole = Model::default();
    for block in blocks {
        let mut out = String::new();
        format.renderer().write_block(block, &mut out);
        let (readable, expected) = expect(block, &out, format);
        let (model, all) = read(readable, format);
        assert_eq!(model, expected, "{block:?}\nrendered as {out:?}");
        let leaves = text_leaves(std::slice::from_ref(block), format)
            .into_iter()
            .filter_map(|leaf| match leaf {
                Leaf::Text(text) | Leaf::Code(text) => Some(no_space(&text)),
                Leaf::Attribute(_) => None,
            });
        let mut rest = all.chars();
        let leaves: String = leaves.collect();
        assert!(
            leaves.chars().all(|c| rest.any(|r| r == c)),
            "leaves {leaves:?} not in {all:?} from {out:?}"
        );
        whole.extend(model);
    }
    let joined = render_text(blocks, format.renderer());
    assert_eq!(
        read(&joined, format).0,
        whole,
        "blocks interfere when joined: {joined:?}"
    );
}

/// What of `out` reads as Markdown on its own (a collapsed block's
/// children), and the model it must read back as.
fn expect<'o>(block: &Block, out: &'o str, format: ContentFormat) -> (&'o str, Model) {
    let mut expect = Expect::new(format);
    match block {
        Block::Collapsed {
            name,
            child_blocks,
            text,
            ..
        } => {
            let name = name
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&quot;");
            let name = name
                .replace('\'', "&apos;")
                .replace('\n', "&#10;")
                .replace('\r', "&#13;");
            let wrapped = out
                .strip_prefix(&format!("<collapsed name=\"{name}\">"))
                .is_some_and(|r| r.ends_with("</collapsed>"));
            assert!(wrapped, "{out:?} is no collapsed {name:?}");
            if child_blocks.is_empty() {
                expect.chars(text.as_deref().unwrap_or_default(), 0);
            }
            child_blocks.iter().for_each(|child| expect.block(child));
            (out, expect.model)
        }
        Block::Text {
            semantic: Some(s), ..
        } if s.kind == S::Table && matches!(s.structure, Some(Structure::Table(_))) => {
            let Some(Structure::Table(table)) = &s.structure else {
                unreachable!()
            };
            (out, expect_table(table, out, format))
        }
        _ => {
            expect.block(block);
            (out, expect.model)
        }
    }
}

/// A table: its cells, padded to the widest row, and its alignments. In
/// CommonMark the fenced text is read here, split at unescaped pipes, and
/// must hold the same table.
fn expect_table(table: &Table, out: &str, format: ContentFormat) -> Model {
    let columns = table
        .rows
        .iter()
        .map(Vec::len)
        .fold(table.headers.len(), usize::max);
    let cells = |row: &[String]| -> Vec<String> {
        (0..columns)
            .map(|i| normalize(row.get(i).map_or("", String::as_str)))
            .collect()
    };
    let rows: Vec<Vec<String>> = std::iter::once(&table.headers)
        .chain(&table.rows)
        .map(|r| cells(r))
        .collect();
    let align = |i| match table.alignments.get(i) {
        Some(Alignment::Center) => "center",
        Some(Alignment::Right) => "right",
        _ => "none",
    };
    let fact = format!(
        "table {:?}",
        ((0..columns).map(align).collect::<Vec<_>>(), rows)
    );
    let mut model = Model::default();
    match (columns, format) {
        (0, _) => assert_eq!(out, ""),
        (_, GFM) => model.facts.push(fact),
        _ => {
            let fenced = out
                .split_once('\n')
                .and_then(|(_, rest)| rest.rsplit_once('\n'));
            let code = fenced.expect("a fenced table").0;
            let lines: Vec<Vec<String>> = code.lines().map(split_row).collect();
            let rule = |cell: &String| match (cell.starts_with(':'), cell.ends_with(':')) {
                (true, true) => "center",
                (false, true) => "right",
                _ => "none",
            };
            let rows = lines
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != 1)
                .map(|(_, row)| row.clone());
            let read_back = (
                lines[1].iter().map(rule).collect::<Vec<_>>(),
                rows.collect::<Vec<_>>(),
            );
            assert_eq!(format!("table {read_back:?}"), fact, "{out:?}");
            model
                .facts
                .push(format!("code {:?}", (String::new(), format!("{code}\n"))));
        }
    }
    model
}

fn split_row(line: &str) -> Vec<String> {
    let (mut cells, mut cell, mut chars) = (Vec::new(), String::new(), line.chars());
    while let Some(c) = chars.next() {
        match c {
            '\\' => cell.extend(chars.next().map(|c| if c == 'n' { '\n' } else { c })),
            '|' => cells.push(normalize(&std::mem::take(&mut cell))),
            c => cell.push(c),
        }
    }
    cells.remove(0);
    cells
}

proptest! {
    #![proptest_config(content_trees::config())]

    #[test]
    fn gfm_reads_back_as_the_tree(blocks in content_trees::blocks(6, Switching::Off)) {
        check_blocks(&blocks, GFM);
    }

    #[test]
    fn commonmark_reads_back_as_the_tree(blocks in content_trees::blocks(6, Switching::Off)) {
        check_blocks(&blocks, CM);
    }
}
