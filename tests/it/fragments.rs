//! Structured context: the design's examples exactly (built in Rust, and
//! in the shape the reference engine persists, through the library and the
//! CLI), every format parsing back (property tests over random JSON, which
//! renders losslessly, and random fragments, which drop nulls and empties),
//! and a snapshot per fixture case per format.

use crate::common::limits::{FRAGMENT_MAX_DEPTH as MAX_DEPTH, ROOT_KEY};
use agent_context::format::{
    Delimiter, FormatOptions, FragmentFormat, Tree, render_fragments, render_value,
};

use agent_context::fragment::{
    Child, Fragment, FragmentData, fragment, fragments_from_json, guardrail, hint, role, term,
};
use agent_context::{ErrorKind, MemoryState};
use proptest::prelude::*;
use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use serde_json::{Map, Value, json};

use crate::common::cli::{Run, run};
use crate::common::{
    assert_holds_wide_numbers, assert_shows_wide_numbers, proptest_config_with, same_json,
    wide_numbers_json,
};

const CASES: &str = include_str!("../fixtures/fragment_cases.json");
const DOCUMENT: &str = include_str!("../fixtures/fragment_document.json");

const CONFIG_XML: &str = "\
<config>
  <debug>true</debug>
  <timeout>30</timeout>
  <database>
    <host>localhost</host>
    <port>5432</port>
  </database>
</config>";

const CONFIG_MARKDOWN: &str = "\
## Config
- **debug**: true
- **timeout**: 30
- **database**:
  - **host**: localhost
  - **port**: 5432";

const CONFIG_TOON: &str = "\
config:
  debug: true
  timeout: 30
  database:
    host: localhost
    port: 5432";

/// The design's example as the reference fragment engine persists it: the
/// children of `config` as one list, an object beside a fragment.
const PERSISTED: &str = r#"{"name": "config", "data": [{"debug": true, "timeout": 30},
    {"name": "database", "data": {"host": "localhost", "port": 5432}}]}"#;

fn render(fragments: &[Fragment], format: FragmentFormat) -> String {
    render_fragments(fragments, format, &FormatOptions::default()).unwrap()
}

fn config_in_rust() -> Fragment {
    fragment("config", [json!({"debug": true, "timeout": 30})]).with(fragment(
        "database",
        [json!({"host": "localhost", "port": 5432})],
    ))
}

// ---------------------------------------------------------------- invariants

/// The input minus nulls, in objects and arrays alike, and nothing else:
/// what TOML, which has no null, must give back. `None` for a null.
fn without_nulls(value: &Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::Array(items) => Some(items.iter().filter_map(without_nulls).collect()),
        Value::Object(map) => Some(
            map.iter()
                .filter_map(|(k, v)| Some((k.clone(), without_nulls(v)?)))
                .collect(),
        ),
        other => Some(other.clone()),
    }
}

/// What a strict XML parser reads back from a text node: characters XML 1.0
/// forbids are U+FFFD.
fn xml_text(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\t'
            | '\n'
            | '\r'
            | '\u{20}'..='\u{D7FF}'
            | '\u{E000}'..='\u{FFFD}'
            | '\u{10000}'.. => c,
            _ => '\u{FFFD}',
        })
        .collect()
}

/// A leaf as XML and Markdown show it: its key (`None` for a list element),
/// its text, and whether it is a null. Empty containers and nulls are leaves
/// with no text (`<key/>`, `<key null="true"/>`).
type Shown = (Option<String>, String, bool);

/// Leaves in document order.
fn leaves(value: &Value, label: Option<&str>, out: &mut Vec<Shown>) {
    let label = label.map(str::to_owned);
    match value {
        Value::Array(items) if !items.is_empty() => {
            items.iter().for_each(|item| leaves(item, None, out));
        }
        Value::Object(map) if !map.is_empty() => map
            .iter()
            .for_each(|(k, v)| leaves(v, Some(&xml_text(k)), out)),
        Value::Array(_) | Value::Object(_) => out.push((label, String::new(), false)),
        Value::Null => out.push((label, String::new(), true)),
        Value::String(s) => out.push((label, xml_text(s), false)),
        other => out.push((label, other.to_string(), false)),
    }
}

/// The leaves of a document: a root object's entries are the top-level
/// entries (none for `{}`); any other root sits under `value`.
fn expected_leaves(normalized: &Value) -> Vec<Shown> {
    let mut out = Vec::new();
    match normalized {
        Value::Object(map) => map
            .iter()
            .for_each(|(k, v)| leaves(v, Some(&xml_text(k)), &mut out)),
        other => leaves(other, Some(ROOT_KEY), &mut out),
    }
    out
}

/// `found` shows the leaves of `expected` in order, with their keys where
/// `expected` has one.
fn assert_same_leaves(found: &[Shown], expected: &[Shown], context: &str) {
    assert_eq!(found.len(), expected.len(), "leaf count\n{context}");
    for ((found_key, found_text, found_null), (key, text, null)) in found.iter().zip(expected) {
        assert_eq!((found_text, found_null), (text, null), "\n{context}");
        if key.is_some() {
            assert_eq!(found_key, key, "\n{context}");
        }
    }
}

/// What XML and Markdown show of a document: its leaves in order, and how
/// many entries it has at the top level.
struct Rendered {
    leaves: Vec<Shown>,
    top_level: usize,
}

/// XML parses strictly and its leaf elements are the leaves of the JSON,
/// keyed members named by their key (as element or `name` attribute), nulls
/// marked `null="true"`: in the JSON's order when fragments are grouped,
/// else (fragments as they come) the same leaves in theirs.
fn assert_xml_shows_the_json(xml: &str, normalized: &Value, grouped: bool) -> Rendered {
    let wrapped = format!("<root>{xml}</root>");
    let document = roxmltree::Document::parse(&wrapped)
        .unwrap_or_else(|e| panic!("XML does not parse: {e}\n{xml}"));
    // The wrapper, not an element the JSON names `root`.
    let wrapper = document.root_element();
    let leaves: Vec<Shown> = document
        .descendants()
        .filter(|n| n.is_element() && *n != wrapper)
        .filter(|n| !n.children().any(|c| c.is_element()))
        .map(|n| {
            let name = n.attribute("name").unwrap_or(n.tag_name().name());
            let text = n.text().unwrap_or("").to_owned();
            (
                Some(name.to_owned()),
                text,
                n.attribute("null") == Some("true"),
            )
        })
        .collect();
    let expected = expected_leaves(normalized);
    if grouped {
        assert_same_leaves(&leaves, &expected, xml);
    } else {
        let texts = |leaves: &[Shown]| {
            let mut texts: Vec<(String, bool)> =
                leaves.iter().map(|(_, t, n)| (t.clone(), *n)).collect();
            texts.sort();
            texts
        };
        assert_eq!(texts(&leaves), texts(&expected), "{xml}");
    }
    let top_level = document
        .root_element()
        .children()
        .filter(|n| n.is_element())
        .count();
    Rendered { leaves, top_level }
}

/// `decoded` is `expected`, but for numbers a format's own numbers cannot
/// hold, which come back as the string of their exact digits (TOML, TOON).
/// A number that comes back as a number must be the same value exactly.
fn same_data(decoded: &Value, expected: &Value) -> bool {
    match (decoded, expected) {
        (Value::String(text), Value::Number(n)) => text == n.as_str(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_data(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, x)| y.get(k).is_some_and(|y| same_data(x, y)))
        }
        (x, y) => same_json(x, y),
    }
}

/// TOML parses and equals the input minus nulls (and nothing else), with a
/// non-table document under `value`, integers past `i64` and floats past
/// `f64` as strings of their digits.
fn assert_toml_parses_back(toml: &str, normalized: &Value) {
    let table: toml::Table =
        toml::from_str(toml).unwrap_or_else(|e| panic!("TOML does not parse: {e}\n{toml}"));
    let expected = match without_nulls(normalized) {
        None => json!({}),
        Some(table @ Value::Object(_)) => table,
        Some(other) => json!({ ROOT_KEY: other }),
    };
    let back = serde_json::to_value(table).unwrap();
    assert!(
        same_data(&back, &expected),
        "parsed {back}\nexpected {expected}\n{toml}"
    );
}

/// TOON decodes (strictly, per the spec) to the input, numbers past the
/// encoder's as strings of their digits.
fn assert_toon_decodes_back(toon: &str, normalized: &Value, options: &FormatOptions) {
    let decode_options =
        toon_format::DecodeOptions::new().with_indent(toon_format::Indent::Spaces(options.indent));
    let decoded: Value = toon_format::decode(toon, &decode_options)
        .unwrap_or_else(|e| panic!("TOON does not decode: {e}\n{toon}"));
    assert!(
        same_data(&decoded, normalized),
        "decoded {decoded}\nexpected {normalized}\n{toon}"
    );
}

/// Markdown has one `##` heading per top-level entry and one list item per
/// leaf (an item that holds no nested list; `- []`, `- null` included).
fn assert_markdown_lists_every_leaf(markdown: &str, xml: &Rendered) {
    let mut open_items: Vec<bool> = Vec::new();
    let (mut leaf_items, mut headings) = (0, 0);
    for event in Parser::new(markdown) {
        match event {
            Event::Start(Tag::Heading { .. }) => headings += 1,
            Event::Start(Tag::List(_)) => {
                if let Some(has_list) = open_items.last_mut() {
                    *has_list = true;
                }
            }
            Event::Start(Tag::Item) => open_items.push(false),
            Event::End(TagEnd::Item) => leaf_items += usize::from(!open_items.pop().unwrap()),
            _ => {}
        }
    }
    assert_eq!(headings, xml.top_level, "headings\n{markdown}");
    assert_eq!(leaf_items, xml.leaves.len(), "leaf items\n{markdown}");
}

/// Every format, rendered by `render` with `options`, gives `tree` back:
/// XML and Markdown its leaves (grouped or not, as `options` say), TOML
/// and TOON its JSON; nothing at all for an empty tree.
fn assert_every_format_round_trips(
    tree: &Tree,
    options: &FormatOptions,
    render: impl Fn(FragmentFormat) -> String,
) {
    if tree.is_empty() {
        for format in FragmentFormat::ALL {
            assert_eq!(render(format), "", "{format} of an empty document");
        }
        return;
    }
    let normalized = tree.to_value();
    let xml = render(FragmentFormat::Xml);
    let shown = assert_xml_shows_the_json(&xml, &normalized, options.group_fragments);
    assert_markdown_lists_every_leaf(&render(FragmentFormat::Markdown), &shown);
    assert_toml_parses_back(&render(FragmentFormat::Toml), &normalized);
    assert_toon_decodes_back(&render(FragmentFormat::Toon), &normalized, options);
}

/// `render --data` loses nothing: every format gives the value itself back.
fn check_value(value: &Value, options: &FormatOptions) {
    let tree = Tree::from_value(value).unwrap();
    if !tree.is_empty() {
        assert!(same_json(&tree.to_value(), value), "{value}");
    }
    assert_every_format_round_trips(&tree, options, |format| {
        render_value(value, format, options).unwrap()
    });
}

// ------------------------------------------------------------ the examples

#[test]
fn the_design_example_renders_exactly() {
    let built = [config_in_rust()];
    let parsed = fragments_from_json(json!([{"name": "config", "data": [
        {"name": "debug", "data": true},
        {"name": "timeout", "data": 30},
        {"name": "database", "data": {"host": "localhost", "port": 5432}}
    ]}]))
    .unwrap();
    for fragments in [&built[..], &parsed[..]] {
        assert_eq!(render(fragments, FragmentFormat::Xml), CONFIG_XML);
        assert_eq!(render(fragments, FragmentFormat::Markdown), CONFIG_MARKDOWN);
        assert_eq!(render(fragments, FragmentFormat::Toon), CONFIG_TOON);
        let normalized = json!({"config": {"debug": true, "timeout": 30,
            "database": {"host": "localhost", "port": 5432}}});
        assert_toml_parses_back(&render(fragments, FragmentFormat::Toml), &normalized);
    }
}

#[test]
fn the_persisted_shape_renders_exactly_as_the_design_says() {
    let persisted = Fragment::from_json(serde_json::from_str(PERSISTED).unwrap()).unwrap();
    assert_eq!(persisted, config_in_rust());
    let fragments = [persisted];
    assert_eq!(render(&fragments, FragmentFormat::Xml), CONFIG_XML);
    assert_eq!(
        render(&fragments, FragmentFormat::Markdown),
        CONFIG_MARKDOWN
    );
    assert_eq!(render(&fragments, FragmentFormat::Toon), CONFIG_TOON);
    // Unparsed, as a value in Rust, the same list renders the same.
    let raw: Value = serde_json::from_str::<Value>(PERSISTED).unwrap()["data"].clone();
    let unparsed = [Fragment::new("config", raw)];
    for format in FragmentFormat::ALL {
        assert_eq!(
            render(&unparsed, format),
            render(&fragments, format),
            "{format}"
        );
    }
}

#[test]
fn the_persisted_shape_renders_exactly_from_the_cli() {
    let document = format!(r#"{{"fragments": [{PERSISTED}]}}"#);
    for (format, expected) in [
        ("xml", CONFIG_XML),
        ("markdown", CONFIG_MARKDOWN),
        ("toon", CONFIG_TOON),
    ] {
        let out = run(&["render", "--format", format], &document);
        let seen = (out.code, out.stdout, out.stderr);
        assert_eq!(
            seen,
            (0, format!("{expected}\n"), String::new()),
            "{format}"
        );
    }
}

#[test]
fn a_session_saved_in_the_persisted_shape_loads_and_builds() {
    let session = format!(
        r#"{{"system_prompt": "Be brief.", "fragments": [{PERSISTED}],
        "chunks": [{{"id": "u1", "kind": "agent", "role": "user", "text": "hi"}}]}}"#
    );
    let state = MemoryState::from_json_str(&session).unwrap();
    assert_eq!(state.fragments, [config_in_rust()]);
    let args = [
        "build",
        "--output",
        "openai",
        "--fragments-format",
        "markdown",
    ];
    let Run {
        code,
        stdout,
        stderr,
    } = run(&args, &session);
    assert_eq!(code, 0, "{stderr}");
    let built: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        built["messages"][0]["content"],
        format!("Be brief.\n\n{CONFIG_MARKDOWN}")
    );
}

/// The wide numbers read back from one format's output: XML's element
/// texts, TOML's table and TOON's object (strings of the digits there).
fn wide_numbers_read_back(format: &str, out: &str) -> Value {
    match format {
        "xml" => {
            let wrapped = format!("<root>{out}</root>");
            let document = roxmltree::Document::parse(&wrapped).unwrap();
            let texts = document
                .descendants()
                .filter(|n| n.is_element() && !n.children().any(|c| c.is_element()))
                .map(|n| {
                    (
                        n.tag_name().name().to_owned(),
                        json!(n.text().unwrap_or("")),
                    )
                });
            Value::Object(texts.collect())
        }
        "toml" => serde_json::to_value(toml::from_str::<toml::Table>(out).unwrap()).unwrap(),
        "toon" => toon_format::decode(out, &toon_format::DecodeOptions::new()).unwrap(),
        _ => unreachable!("{format}"),
    }
}

#[test]
fn numbers_past_64_bits_keep_their_digits_in_every_format() {
    let data = wide_numbers_json();
    let document = format!(r#"{{"fragments": [{{"name": "account", "data": {data}}}]}}"#);
    for format in ["xml", "markdown", "toml", "toon"] {
        let fragments = run(&["render", "--format", format], &document);
        let value = run(&["render", "--data", "--format", format], &data);
        for out in [&fragments, &value] {
            assert_eq!(out.code, 0, "{format}: {}", out.stderr);
            assert_shows_wide_numbers(&out.stdout);
        }
        // XML texts, TOML and TOON strings (their numbers cannot hold these)
        // parse back to the same digits.
        if format != "markdown" {
            let back = wide_numbers_read_back(format, &value.stdout);
            assert_holds_wide_numbers(&back, true);
            let back = wide_numbers_read_back(format, &fragments.stdout);
            let inner = if format == "xml" {
                back
            } else {
                back["account"].clone()
            };
            assert_holds_wide_numbers(&inner, true);
        }
    }
    // The library renders what the CLI prints.
    let value: Value = serde_json::from_str(&data).unwrap();
    for format in FragmentFormat::ALL {
        let out = render_value(&value, format, &FormatOptions::default()).unwrap();
        assert_shows_wide_numbers(&out);
    }
    // Markdown shows each as a bullet of its digits.
    let markdown = run(&["render", "--format", "markdown"], &document).stdout;
    assert!(
        markdown.contains("- **acct**: 12345678901234567890123\n"),
        "{markdown}"
    );
}

#[test]
fn children_beside_fragments_fold_as_the_helper_folds_them() {
    let persisted = json!({"name": "rules", "data": [
        "Stay on task.",
        {"name": "hint", "data": "a"},
        {"name": "hint", "data": "b"},
        {"limit": 3},
        null
    ]});
    let parsed = Fragment::from_json(persisted).unwrap();
    let built = fragment(
        "rules",
        [
            Child::from("Stay on task."),
            hint("a").into(),
            hint("b").into(),
            json!({"limit": 3}).into(),
        ],
    );
    assert_eq!(parsed, built);
    assert_eq!(
        render(std::slice::from_ref(&parsed), FragmentFormat::Xml),
        "<rules>\n  <value>Stay on task.</value>\n  <hint>a</hint>\n  <hint>b</hint>\n  \
         <limit>3</limit>\n</rules>"
    );
    let grouped = FormatOptions::default().with_group_fragments(true);
    assert_eq!(
        render_fragments(&[parsed], FragmentFormat::Xml, &grouped).unwrap(),
        "<rules>\n  <value>Stay on task.</value>\n  <hints>\n    <hint>a</hint>\n    \
         <hint>b</hint>\n  </hints>\n  <limit>3</limit>\n</rules>"
    );
    // No fragment among the elements: a plain list.
    let plain = Fragment::from_json(json!({"name": "rows", "data": [{"name": "a"}, 1]})).unwrap();
    assert_eq!(
        render(&[plain], FragmentFormat::Toon),
        "rows[2]:\n  - name: a\n  - 1"
    );
}

#[test]
fn the_design_example_serializes_as_written() {
    assert_eq!(
        serde_json::to_value(config_in_rust()).unwrap(),
        json!({"name": "config", "data": {"debug": true, "timeout": 30,
            "database": {"host": "localhost", "port": 5432}}})
    );
}

#[test]
fn hints_come_as_they_are_unless_grouped_or_keys_cannot_repeat() {
    let fragments = [
        role("You are a careful coding agent."),
        hint("a"),
        hint("b"),
    ];
    assert_eq!(
        render(&fragments, FragmentFormat::Xml),
        "<role>You are a careful coding agent.</role>\n<hint>a</hint>\n<hint>b</hint>"
    );
    assert_eq!(
        render(&fragments, FragmentFormat::Markdown),
        "## Role\n- You are a careful coding agent.\n\n## Hint\n- a\n\n## Hint\n- b"
    );
    let grouped = FormatOptions::default().with_group_fragments(true);
    let render_grouped = |format| render_fragments(&fragments, format, &grouped).unwrap();
    assert_eq!(
        render_grouped(FragmentFormat::Xml),
        "<role>You are a careful coding agent.</role>\n<hints>\n  <hint>a</hint>\n  <hint>b</hint>\n</hints>"
    );
    assert_eq!(
        render_grouped(FragmentFormat::Markdown),
        "## Role\n- You are a careful coding agent.\n\n## Hints\n- **hint**: a\n- **hint**: b"
    );
    // TOML and TOON cannot repeat a key: they group either way.
    for format in [FragmentFormat::Toml, FragmentFormat::Toon] {
        assert_eq!(render_grouped(format), render(&fragments, format));
    }
    assert_eq!(
        render(&fragments, FragmentFormat::Toon),
        "role: You are a careful coding agent.\nhints[2]: a,b"
    );
    assert_eq!(
        render(&fragments, FragmentFormat::Toml),
        "role = \"You are a careful coding agent.\"\nhints = [\"a\", \"b\"]"
    );
}

#[test]
fn repeated_records_become_a_table() {
    let fragments = [
        term("MRR", "monthly recurring revenue"),
        term("ARR", "annual recurring revenue"),
        guardrail("Never push to main", Some("CI deploys main"), None),
    ];
    assert_eq!(
        render(&fragments, FragmentFormat::Toon),
        "terms[2]{name,definition}:\n  MRR,monthly recurring revenue\n  ARR,annual recurring revenue\n\
         guardrail:\n  rule: Never push to main\n  reason: CI deploys main"
    );
}

#[test]
fn nesting_at_the_limit_round_trips_and_one_more_level_is_an_error() {
    let mut deepest = json!({"leaf": "bottom"});
    for level in 1..MAX_DEPTH {
        deepest = if level % 2 == 0 {
            json!({"k": deepest})
        } else {
            json!([deepest])
        };
    }
    check_value(&deepest, &FormatOptions::default());
    let too_deep = json!({"over": deepest});
    for format in FragmentFormat::ALL {
        let error = render_value(&too_deep, format, &FormatOptions::default()).unwrap_err();
        let ErrorKind::Fragment { path, message } = error.kind() else {
            panic!("{error:?}")
        };
        assert!(path.starts_with("over[0].k[0]"), "{path}");
        assert!(message.contains("64 levels"), "{message}");
    }
}

#[test]
fn the_document_fixture_round_trips_in_every_format() {
    let document: Value = serde_json::from_str(DOCUMENT).unwrap();
    let fragments = fragments_from_json(document["fragments"].clone()).unwrap();
    let tree = Tree::from_fragments(&fragments).unwrap();
    for group in [false, true] {
        let options = FormatOptions::default().with_group_fragments(group);
        assert_every_format_round_trips(&tree, &options, |format| {
            render_fragments(&fragments, format, &options).unwrap()
        });
    }
}

#[test]
fn the_case_fixtures_round_trip_in_every_format() {
    let cases: Map<String, Value> = serde_json::from_str(CASES).unwrap();
    for (_, value) in cases {
        check_value(&value, &FormatOptions::default());
    }
}

// ------------------------------------------------------------- properties

fn text() -> BoxedStrategy<String> {
    prop_oneof![
        3 => "[a-z0-9 _.:,|#>*`~=\\-\\[\\]{}<>&\"'\\\\\n\r\téü漢😀\u{0}\u{1}\u{7f}\u{FFFE}]{0,14}",
        1 => prop::sample::select(vec![
            "", " ", "- x", "1. a", "# h", "```", "<div>", "***", "===", "a\n- b", "a\n\n\nb",
            "\n\nlead", "trail\n", "  - y", "true", "null", "-1", "0x10", "a,b", "[1]",
            "<!-- open", "<pre>", "<div>\n- x", "> - q", "<script>\n\n- s", "```\n- f",
        ])
        .prop_map(str::to_owned),
    ]
    .boxed()
}

fn key() -> BoxedStrategy<String> {
    prop_oneof![4 => "[a-z_][a-z0-9_]{0,6}", 1 => text()].boxed()
}

fn leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        (-1000i32..1000).prop_map(|n| Value::from(f64::from(n) / 8.0)),
        wide_number(),
        text().prop_map(Value::from),
    ]
    .boxed()
}

/// A number with more digits than `i64`, `u64` or `f64` hold, or a float
/// written another way than its shortest form: each format keeps its digits.
fn wide_number() -> BoxedStrategy<Value> {
    prop_oneof![
        "-?[1-9][0-9]{19,30}",
        "-?[0-9]\\.[0-9]{17,25}",
        "-?[1-9](\\.[0-9]{1,4})?[eE][+-]?[0-9]{1,4}",
        "-?[0-9]\\.[0-9]0{1,3}",
    ]
    .prop_map(|text| Value::Number(text.parse().expect("a JSON number")))
    .boxed()
}

/// Rows sharing one set of keys: TOON's tabular form.
fn records(cell: BoxedStrategy<Value>) -> impl Strategy<Value = Value> {
    prop::collection::vec(key(), 1..4).prop_flat_map(move |keys| {
        let row = prop::collection::vec(cell.clone(), keys.len())
            .prop_map(move |cells| keys.iter().cloned().zip(cells).collect::<Map<_, _>>());
        prop::collection::vec(row.prop_map(Value::Object), 1..4).prop_map(Value::Array)
    })
}

fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
            records(leaf()),
        ]
    })
}

fn name() -> impl Strategy<Value = &'static str> + Clone {
    prop::sample::select(vec![
        "hint", "hints", "role", "term", "config", "a b", "x", "value", "values",
    ])
}

/// A children list as the reference engine persists one: at least one
/// fragment among objects, primitives, arrays and nulls.
fn children_of(data: BoxedStrategy<Value>) -> impl Strategy<Value = Value> {
    let child = (name(), data).prop_map(|(n, d)| json!({"name": n, "data": d}));
    let element = prop_oneof![2 => child.clone(), 1 => json_value()];
    let others = prop::collection::vec(element, 0..5);
    (child, others, any::<prop::sample::Index>()).prop_map(|(first, mut others, at)| {
        others.insert(at.index(others.len() + 1), first);
        Value::Array(others)
    })
}

/// Fragment data: plain JSON or children lists, nested.
fn fragment_data() -> BoxedStrategy<Value> {
    json_value()
        .boxed()
        .prop_recursive(3, 24, 5, |inner| children_of(inner).boxed())
        .boxed()
}

fn fragment_list() -> impl Strategy<Value = Vec<Fragment>> {
    let name = name();
    let single = (name.clone(), fragment_data()).prop_map(|(n, v)| Fragment::new(n, v));
    let nested = single.prop_recursive(3, 24, 4, move |inner| {
        (name.clone(), prop::collection::vec(inner, 0..4))
            .prop_map(|(n, list)| Fragment::new(n, FragmentData::Fragments(list)))
    });
    prop::collection::vec(nested, 0..6)
}

fn options() -> impl Strategy<Value = FormatOptions> {
    let delimiter = prop::sample::select(vec![Delimiter::Comma, Delimiter::Tab, Delimiter::Pipe]);
    (delimiter, 1usize..5, any::<bool>()).prop_map(|(d, i, group)| {
        FormatOptions::default()
            .with_delimiter(d)
            .with_indent(i)
            .with_group_fragments(group)
    })
}

/// 128 cases, or `PROPTEST_CASES`.
fn config() -> ProptestConfig {
    proptest_config_with(128)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_format_gives_random_json_back(value in json_value(), options in options()) {
        check_value(&value, &options);
    }

    /// TOML loses nulls (it has none) and nothing else: empty arrays and
    /// tables stay, in tables and arrays alike, and nothing shifts.
    #[test]
    fn toml_gives_random_json_back_minus_nulls(value in json_value()) {
        let toml = render_value(&value, FragmentFormat::Toml, &FormatOptions::default()).unwrap();
        assert_toml_parses_back(&toml, &value);
    }

    #[test]
    fn every_format_gives_random_fragments_back(fragments in fragment_list(), options in options()) {
        let tree = Tree::from_fragments(&fragments).unwrap();
        assert_every_format_round_trips(&tree, &options, |format| {
            render_fragments(&fragments, format, &options).unwrap()
        });
        // Serializing then parsing never changes what renders.
        let json = serde_json::to_value(&fragments).unwrap();
        let back = fragments_from_json(json).unwrap();
        prop_assert_eq!(Tree::from_fragments(&back).unwrap(), tree);
    }
}

// -------------------------------------------------------------- snapshots

#[test]
fn every_case_in_every_format() {
    let cases: Map<String, Value> = serde_json::from_str(CASES).unwrap();
    for (case, value) in &cases {
        for format in FragmentFormat::ALL {
            let out = render_value(value, format, &FormatOptions::default()).unwrap();
            insta::assert_snapshot!(format!("{case}_{format}"), out);
        }
    }
}

#[test]
fn the_document_in_every_format() {
    let document: Value = serde_json::from_str(DOCUMENT).unwrap();
    let fragments = fragments_from_json(document["fragments"].clone()).unwrap();
    for format in FragmentFormat::ALL {
        insta::assert_snapshot!(format!("document_{format}"), render(&fragments, format));
    }
    // Grouped: TOML and TOON always are, so only XML and Markdown differ.
    let grouped = FormatOptions::default().with_group_fragments(true);
    for format in [FragmentFormat::Xml, FragmentFormat::Markdown] {
        let out = render_fragments(&fragments, format, &grouped).unwrap();
        insta::assert_snapshot!(format!("document_{format}_grouped"), out);
    }
}

#[test]
fn toon_delimiters_on_records() {
    let cases: Map<String, Value> = serde_json::from_str(CASES).unwrap();
    for (name, delimiter) in [("tab", Delimiter::Tab), ("pipe", Delimiter::Pipe)] {
        let options = FormatOptions::default()
            .with_delimiter(delimiter)
            .with_indent(4);
        let out = render_value(&cases["uniform_records"], FragmentFormat::Toon, &options).unwrap();
        insta::assert_snapshot!(format!("uniform_records_toon_{name}"), out);
    }
}
