//! What the input schema refuses, and how its errors say where and why.

use crate::common::limits::MAX_JSON_DEPTH;
use agent_context::{ContextBuilder, ErrorKind, JsonProblem, MemoryState, ParseOptions};

fn error(json: &str) -> String {
    MemoryState::from_json_str(json).unwrap_err().to_string()
}

#[test]
fn empty_input_and_line_starts_are_reported_plainly() {
    assert!(error("  \n").contains("the input is empty"));
    let truncated = MemoryState::from_json_str("{\"chunks\": [\n").unwrap_err();
    match truncated.kind() {
        ErrorKind::Json { line, column, .. } => assert_eq!((*line, *column), (2, 1)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_system_role_points_to_the_system_kind() {
    let agent = r#"{"chunks": [{"id": "a", "kind": "agent", "role": "system", "text": "x"}]}"#;
    assert!(
        error(agent).contains("use kind \"system\""),
        "{}",
        error(agent)
    );
    let system = r#"{"chunks": [{"id": "s", "kind": "system", "role": "system"}]}"#;
    assert!(
        error(system).contains("only agent chunks take a role"),
        "{}",
        error(system)
    );
}

#[test]
fn a_priority_past_i64_is_named_as_written() {
    for number in ["9223372036854775808", "-9223372036854775809", "1.5"] {
        let chunk =
            format!(r#"{{"chunks": [{{"id": "a", "kind": "thinking", "priority": {number}}}]}}"#);
        let error = error(&chunk);
        assert!(
            error.starts_with(
                "invalid chunk chunks[0] (id \"a\"): field `priority`: expected an integer \
                 from -9223372036854775808 to 9223372036854775807"
            ),
            "{error}"
        );
        assert!(error.ends_with(&format!("({number})")), "{error}");
    }
}

#[test]
fn a_key_given_twice_names_the_chunk_and_the_key() {
    let text_twice =
        r#"{"chunks": [{"id": "u1", "kind": "agent", "role": "user", "text": "a", "text": "b"}]}"#;
    assert_eq!(
        error(text_twice),
        "invalid JSON at line 1, column 77, in chunks[0] (id \"u1\"): key `text` is given \
         twice in one object; give each key once (readers differ on which value wins)"
    );
    // Without this check the second id would win and the first chunk
    // would surface later as a baffling "duplicate id".
    let id_twice = r#"{"chunks": [{"id": "a", "kind": "system", "id": "b"}]}"#;
    assert!(
        error(id_twice).contains("in chunks[0] (id \"a\"): key `id` is given twice"),
        "{}",
        error(id_twice)
    );
    let chunks_twice = r#"{"chunks": [], "chunks": [{"id": "a", "kind": "system"}]}"#;
    assert!(
        error(chunks_twice).contains("at the top level: key `chunks` is given twice"),
        "{}",
        error(chunks_twice)
    );
    // Through serde too, for a session inside the caller's own types.
    let serde = serde_json::from_str::<MemoryState>(chunks_twice).unwrap_err();
    assert!(
        serde.to_string().starts_with("key `chunks` is given twice"),
        "{serde}"
    );
    let chunk = serde_json::from_str::<agent_context::MemoryChunk>(r#"{"id": "a", "id": "b"}"#);
    assert!(chunk.is_err());
}

#[test]
fn context_management_is_read_and_written_back() {
    let json = r#"{"chunks":[],"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]}}"#;
    let state = MemoryState::from_json_str(json).unwrap();
    let management = serde_json::to_value(&state.context_management).unwrap();
    assert_eq!(management["edits"].as_array().map(Vec::len), Some(1));
    assert_eq!(serde_json::to_string(&state).unwrap(), json);
    let null = MemoryState::from_json_str(r#"{"context_management": null}"#).unwrap();
    assert_eq!(null.context_management, None);
}

#[test]
fn a_bad_context_management_names_the_field_inside_it() {
    assert_eq!(
        error(r#"{"context_management": {"edits": [{"type": "clear_all"}]}}"#),
        "invalid session: field `context_management.edits[0].type`: unknown variant \
         `clear_all`, expected one of `clear_tool_uses_20250919`, `clear_thinking_20251015`, `compact_20260112`"
    );
    assert_eq!(
        error(
            r#"{"context_management": {"edits": [{"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": -1}}]}}"#
        ),
        "invalid session: field `context_management.edits[0].keep.value`: expected a whole \
         number from 0 to 18446744073709551615, found -1"
    );
    // Numbers no native number holds are named as written, not as serde's buffer sees them.
    for number in ["18446744073709551616", "1.50", "1e400"] {
        let trigger = format!(r#"{{"type": "input_tokens", "value": {number}}}"#);
        let text = format!(
            r#"{{"context_management": {{"edits": [{{"type": "clear_tool_uses_20250919", "trigger": {trigger}}}]}}}}"#
        );
        let written = number.replace("e4", "e+4");
        assert_eq!(
            error(&text),
            format!(
                "invalid session: field `context_management.edits[0].trigger.value`: expected \
                 a whole number from 0 to 18446744073709551615, found {written}"
            )
        );
    }
    assert_eq!(
        error(r#"{"context_management": {"edit": []}}"#),
        "invalid session: field `context_management.edit`: unknown field `edit`, expected \
         `edits`"
    );
    // Where serde names a Rust type, the field and its JSON shape are
    // given instead.
    for (edit, field, shape) in [
        (
            r#"{"type": "clear_thinking_20251015", "keep": "most"}"#,
            "keep",
            r#"the `keep` of clear_thinking_20251015 is "all" or {"type": "thinking_turns", "value": N}"#,
        ),
        (
            r#"{"type": "clear_tool_uses_20250919", "keep": 3}"#,
            "keep",
            r#"the `keep` of clear_tool_uses_20250919 is {"type": "tool_uses", "value": N}"#,
        ),
        (
            r#"{"type": "clear_tool_uses_20250919", "trigger": 100000}"#,
            "trigger",
            r#"`trigger` is {"type": "input_tokens", "value": N} or {"type": "tool_uses", "value": N}"#,
        ),
        (
            r#"{"type": "clear_tool_uses_20250919", "clear_at_least": 5000}"#,
            "clear_at_least",
            r#"`clear_at_least` is {"type": "input_tokens", "value": N}"#,
        ),
        (
            r#"{"type": "clear_tool_uses_20250919", "clear_tool_inputs": "bash"}"#,
            "clear_tool_inputs",
            "`clear_tool_inputs` is true, false or a list of tool names",
        ),
    ] {
        let message = error(&format!(
            r#"{{"context_management": {{"edits": [{edit}]}}}}"#
        ));
        let start = format!("invalid session: field `context_management.edits[0].{field}`: ");
        assert!(
            message.starts_with(&start)
                && message.ends_with(&format!("; {shape}"))
                && !message.contains("enum"),
            "{message}"
        );
    }
    // serde alone would read an array as the object's fields in order.
    assert_eq!(
        error(r#"{"context_management": [[]]}"#),
        "invalid session: field `context_management`: expected an object, found an array; \
         give Anthropic's object, e.g. {\"edits\": []}"
    );
}

#[test]
fn a_root_that_is_not_an_object_is_named() {
    assert_eq!(
        error(" [] "),
        "invalid session: field `(root)`: expected an object, found an array"
    );
}

#[test]
fn a_byte_order_mark_is_not_an_error() {
    let state = MemoryState::from_json_str("\u{feff}{\"chunks\": []}").unwrap();
    assert!(state.chunks.is_empty());
    assert!(error("\u{feff}\n").contains("the input is empty"));
}

#[test]
fn a_lone_surrogate_names_the_chunk_and_field_or_reads_as_replacement() {
    let cut = r#"{"chunks": [{"id": "u1", "kind": "agent", "role": "user", "text": "ok \ud83e"}]}"#;
    assert_eq!(
        error(cut),
        "invalid JSON at line 1, column 71, in chunks[0] (id \"u1\"), field `text`: lone \
         UTF-16 surrogate escape `\\ud83e` (half of a character, as left by a string cut \
         inside an emoji); fix the writer, or read the input with lossy Unicode to replace it \
         with U+FFFD"
    );
    let lossy = ParseOptions::new().lossy_unicode(true);
    let state = MemoryState::from_json_str_with(cut, lossy).unwrap();
    assert_eq!(state.chunks[0].text.as_deref(), Some("ok \u{fffd}"));
}

/// A session whose one chunk's `data` brings the nesting to `depth`.
fn nested_session(depth: usize) -> String {
    let inner = depth - 3; // the session, `chunks` and the chunk
    let data = format!("{}{}", "[".repeat(inner), "]".repeat(inner));
    format!(r#"{{"chunks": [{{"id": "d", "kind": "system", "data": {data}}}]}}"#)
}

#[test]
fn nesting_is_read_and_built_to_the_limit_and_named_one_past_it() {
    // An explicit stack, the CLI main thread's 8 MiB / 8: reading and
    // building at the limit measured under 640 KiB at opt-level 0 and
    // under 192 KiB at the test profile's opt-level 1, so this fails if
    // either grows towards the stack's end.
    let at_limit = nested_session(MAX_JSON_DEPTH);
    let built = std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn(move || {
            let state = MemoryState::from_json_str(&at_limit).map_err(|e| e.to_string())?;
            let result = ContextBuilder::new().max_tokens(100_000).build(&state);
            result.map(|r| r.messages.len()).map_err(|e| e.to_string())
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(built, Ok(1));

    let past = MemoryState::from_json_str(&nested_session(MAX_JSON_DEPTH + 1)).unwrap_err();
    match past.kind() {
        ErrorKind::JsonRejected {
            column,
            place,
            problem,
            ..
        } => {
            assert_eq!(
                *problem,
                JsonProblem::TooDeep {
                    limit: MAX_JSON_DEPTH
                }
            );
            // The bracket that opens level 257.
            assert_eq!(*column, 50 + MAX_JSON_DEPTH - 2);
            assert_eq!(
                place.to_string(),
                "in chunks[0] (id \"d\"), field `data[0][0][0][0][0][0][0]…`"
            );
        }
        other => panic!("{other:?}"),
    }
}

/// A session with one fragment nested `levels` deep, the innermost
/// holding an object.
fn nested_fragment(levels: usize) -> String {
    let mut fragment = r#"{"name": "leaf", "data": {"k": 1}}"#.to_owned();
    for _ in 1..levels {
        fragment = format!(r#"{{"name": "f", "data": [{fragment}]}}"#);
    }
    format!(r#"{{"fragments": [{fragment}], "chunks": []}}"#)
}

#[test]
fn the_fragment_depth_limit_is_reached_before_the_json_one() {
    // 64 fragment levels are more JSON levels (130) than serde_json's
    // own limit of 128.
    let deepest =
        MemoryState::from_json_str(&nested_fragment(crate::common::limits::FRAGMENT_MAX_DEPTH));
    assert!(deepest.is_ok(), "{deepest:?}");
    let past = MemoryState::from_json_str(&nested_fragment(
        crate::common::limits::FRAGMENT_MAX_DEPTH + 1,
    ));
    match past.map_err(agent_context::Error::into_kind) {
        Err(ErrorKind::Fragment { path, message }) => {
            assert!(path.starts_with("fragments[0].data[0].data[0]"), "{path}");
            assert_eq!(message, "nested deeper than 64 levels; flatten the data");
        }
        other => panic!("{other:?}"),
    }
}
