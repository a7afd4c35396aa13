//! agentick's content blocks exactly as agentick writes them (a collapsed
//! reference as a `custom` text block, `group`, a json block with text
//! alone, `state_change`, `tool_use`), rendered as agentick renders them,
//! escaped like all other content: through the library and the CLI.

use crate::common::cli::run;
use agent_context::content::{
    Block, ContentFormat, Rendered, blocks_from_value, render_blocks, render_text,
};
use serde_json::{Value, json};

const CASES: &str = include_str!("../fixtures/agentick_blocks.json");

/// `(case, blocks, format, expected)` for every case and format.
fn cases() -> Vec<(String, Value, &'static str, String)> {
    let cases: Vec<Value> = serde_json::from_str(CASES).expect("the fixture is JSON");
    let mut out = Vec::new();
    for case in cases {
        for format in ["xml", "gfm"] {
            out.push((
                case["case"].as_str().expect("a name").to_owned(),
                case["blocks"].clone(),
                format,
                case[format].as_str().expect("an expected text").to_owned(),
            ));
        }
    }
    out
}

#[test]
fn each_case_renders_as_agentick_renders_it() {
    for (case, blocks, format, expected) in cases() {
        let blocks = blocks_from_value(blocks).unwrap_or_else(|e| panic!("{case}: {e}"));
        let format = ContentFormat::from_name(format).expect("a format");
        let rendered = render_text(&blocks, format.renderer());
        assert_eq!(rendered, expected, "{case} as {format:?}");
    }
}

#[test]
fn each_case_renders_so_from_the_cli() {
    for (case, blocks, format, expected) in cases() {
        let out = run(&["content", "--format", format], &blocks.to_string());
        let seen = (out.code, out.stdout, out.stderr);
        assert_eq!(seen, (0, format!("{expected}\n"), String::new()), "{case}");
    }
}

#[test]
fn xml_output_parses_and_reads_back_the_text() {
    let state = json!({"type": "state_change", "entity": "a<b", "field": "f\"g",
        "from": "x & y", "to": null});
    let blocks = blocks_from_value(state).unwrap();
    let xml = render_text(&blocks, ContentFormat::Xml.renderer());
    let document = roxmltree::Document::parse(&xml).expect("well formed");
    let element = document.root_element();
    assert_eq!(element.tag_name().name(), "state-change");
    assert_eq!(element.attribute("entity"), Some("a<b"));
    assert_eq!(element.attribute("field"), Some("f\"g"));
    assert_eq!(element.text(), Some("a<b.f\"g: \"x & y\" → null"));
}

#[test]
fn tool_use_stays_native_as_agentick_passes_it_through() {
    let call = json!({"type": "tool_use", "toolUseId": "call_1", "name": "shell",
        "input": {"cmd": "ls"}});
    let blocks = blocks_from_value(call.clone()).unwrap();
    let rendered = render_blocks(&blocks, ContentFormat::Gfm.renderer());
    assert!(matches!(&rendered[..], [Rendered::Native(block)] if **block == blocks[0]));
    assert_eq!(serde_json::to_value(&blocks[0]).unwrap(), call);
    let out = run(&["content", "--json"], &call.to_string());
    let printed: Value = serde_json::from_str(&out.stdout).expect("JSON out");
    assert_eq!(printed, json!([call]));
}

#[test]
fn both_collapsed_shapes_keep_their_own_json() {
    let agentick = json!({"type": "text", "text": "s", "semantic": {"type": "custom",
        "rendererTag": "collapsed", "rendererAttrs": {"name": "n", "group": "g"}}});
    let ours = json!({"type": "collapsed", "name": "n", "group": "g", "text": "s"});
    for shape in [agentick, ours] {
        let blocks = blocks_from_value(shape.clone()).unwrap();
        assert_eq!(serde_json::to_value(&blocks[0]).unwrap(), shape);
        let xml = render_text(&blocks, ContentFormat::Xml.renderer());
        assert_eq!(xml, "<collapsed name=\"n\" group=\"g\">s</collapsed>");
    }
    // A `null` group (JSON's spelling of agentick's `undefined`) is none.
    let null_group = json!({"type": "collapsed", "name": "n", "group": null, "text": "s"});
    let blocks = blocks_from_value(null_group).unwrap();
    assert!(matches!(&blocks[0], Block::Collapsed { group: None, .. }));
}

#[test]
fn what_agentick_never_writes_is_refused_with_its_path() {
    let error = |content: Value| blocks_from_value(content).unwrap_err().to_string();
    let misspelt = json!({"type": "text", "text": "s", "semantic": {"type": "custom",
        "rendererTag": "collapsed", "rendererAttrs": {"name": "n", "grop": "g"}}});
    assert_eq!(
        error(misspelt),
        "invalid content at `$.semantic.rendererAttrs.grop`: unknown attribute `grop` of a \
         collapsed block, expected `name`, `group` or `childBlocks`"
    );
    let nested = json!([{"type": "text", "text": "s", "semantic": {"type": "custom",
        "rendererTag": "collapsed", "rendererAttrs": {"childBlocks": [{"type": "chart"}]}}}]);
    let message = error(nested);
    assert!(
        message.contains("$[0].semantic.rendererAttrs.childBlocks[0]") && message.contains("chart"),
        "{message}"
    );
    assert_eq!(
        error(json!({"type": "json"})),
        "invalid content at `$.data`: missing field `data` (or `text`, shown as it is)"
    );
    let message = error(json!({"type": "state_change", "entity": "e", "form": 1}));
    assert!(message.contains("form"), "{message}");
    let message = error(json!({"type": "tool_use", "name": "shell", "input": {}}));
    assert!(message.contains("toolUseId"), "{message}");
    let out = run(&["content"], r#"{"type": "json"}"#);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("`$.data`"), "{}", out.stderr);
}
