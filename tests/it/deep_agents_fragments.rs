//! Fragments as Deep Agents' `@deepagents/context` stores them, rendered
//! with its defaults: repeated sibling names written as they come (grouped
//! under the plural only on request, and always in TOML and TOON, which
//! cannot repeat a key), a single child not wrapped again, fragments nested
//! under an object's key rendered as fragments. Through the library and the
//! CLI (`render`, and `build` for a session's fragments).

use crate::common::cli::run;
use agent_context::format::{FormatOptions, FragmentFormat, render_fragments};
use agent_context::fragment::fragments_from_json;
use serde_json::{Value, json};

const CASES: &str = include_str!("../fixtures/deep_agents_fragments.json");

/// One expectation: a case's fragments, grouped or not, in one format.
struct Case {
    name: String,
    fragments: Value,
    group: bool,
    format: FragmentFormat,
    expected: String,
}

fn cases() -> Vec<Case> {
    let cases: Vec<Value> = serde_json::from_str(CASES).expect("the fixture is JSON");
    let mut out = Vec::new();
    for case in cases {
        for format in FragmentFormat::ALL {
            let Some(expected) = case[format.as_str()].as_str() else {
                continue;
            };
            out.push(Case {
                name: case["case"].as_str().expect("a name").to_owned(),
                fragments: case["fragments"].clone(),
                group: case["group"].as_bool().unwrap_or(false),
                format,
                expected: expected.to_owned(),
            });
        }
    }
    out
}

#[test]
fn each_case_renders_as_the_reference_does() {
    for case in cases() {
        let fragments = fragments_from_json(case.fragments).expect("valid fragments");
        let options = FormatOptions::default().with_group_fragments(case.group);
        let out = render_fragments(&fragments, case.format, &options).expect("renders");
        assert_eq!(out, case.expected, "{} in {}", case.name, case.format);
    }
}

#[test]
fn each_case_renders_so_from_the_cli() {
    for case in cases() {
        let document = json!({"fragments": case.fragments}).to_string();
        let mut args = vec!["render", "--format", case.format.as_str()];
        if case.group {
            args.push("--group-fragments");
        }
        let out = run(&args, &document);
        let seen = (out.code, out.stdout, out.stderr);
        let expected = (0, format!("{}\n", case.expected), String::new());
        assert_eq!(seen, expected, "{} in {}", case.name, case.format);
    }
}

#[test]
fn toml_and_toon_group_with_or_without_the_option() {
    let fragments = fragments_from_json(json!([
        {"name": "hint", "data": "a"}, {"name": "role", "data": "r"}, {"name": "hint", "data": "b"}
    ]))
    .unwrap();
    for format in [FragmentFormat::Toml, FragmentFormat::Toon] {
        let render = |group| {
            let options = FormatOptions::default().with_group_fragments(group);
            render_fragments(&fragments, format, &options).unwrap()
        };
        assert_eq!(render(false), render(true), "{format}");
        assert!(
            render(false).starts_with("hints"),
            "{format}: {}",
            render(false)
        );
    }
}

#[test]
fn build_groups_a_sessions_fragments_on_request() {
    let session = json!({
        "fragments": [{"name": "hint", "data": "Be brief."}, {"name": "hint", "data": "Cite lines."}],
        "chunks": [{"id": "u1", "kind": "agent", "role": "user", "text": "Review this."}]
    })
    .to_string();
    let system = |extra: &[&str]| {
        let mut args = vec!["build", "--output", "openai"];
        args.extend_from_slice(extra);
        let out = run(&args, &session);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let printed: Value = serde_json::from_str(&out.stdout).expect("JSON out");
        printed["messages"][0]["content"]
            .as_str()
            .expect("a system message")
            .to_owned()
    };
    assert_eq!(
        system(&[]),
        "<hint>Be brief.</hint>\n<hint>Cite lines.</hint>"
    );
    assert_eq!(
        system(&["--group-fragments"]),
        "<hints>\n  <hint>Be brief.</hint>\n  <hint>Cite lines.</hint>\n</hints>"
    );
}

#[test]
fn group_fragments_is_refused_where_there_are_no_fragments() {
    let out = run(
        &["render", "--data", "--format", "xml", "--group-fragments"],
        "{}",
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stdout.is_empty());
    assert!(
        out.stderr.contains("--group-fragments") && out.stderr.contains("--data"),
        "{}",
        out.stderr
    );
}
