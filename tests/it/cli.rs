//! The `agent-context` binary: every error path (message, exit code, empty
//! stdout) and the success paths of `build` and `count`.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::common;
use crate::common::cli::{Run, run, run_bytes};
use crate::common::temp::TempDir;

/// A file under the temp dir, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(contents: &str) -> TempFile {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("agent-context-cli-{}-{n}.json", std::process::id()));
        std::fs::write(&path, contents).expect("write temp file");
        TempFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("temp path is UTF-8")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Builds `session` from a temp file with `extra` flags.
fn build_file(session: &str, extra: &[&str]) -> Run {
    let file = TempFile::new(session);
    let mut args = vec!["build", file.path()];
    args.extend_from_slice(extra);
    run(&args, "")
}

/// Asserts a failed run: exit code, nothing on stdout, one `error:` line
/// naming `needle` on stderr.
fn assert_failed(run: &Run, code: i32, needle: &str) {
    assert_eq!(run.code, code, "exit code; stderr: {}", run.stderr);
    assert_eq!(run.stdout, "", "stdout must stay empty on error");
    assert!(run.stderr.starts_with("error: "), "stderr: {}", run.stderr);
    assert!(
        run.stderr.contains(needle),
        "{needle:?} not in stderr: {}",
        run.stderr
    );
}

const SMALL: &str = r#"{
  "id": "s1",
  "system_prompt": "You are terse.",
  "chunks": [
    {"id": "u1", "kind": "agent", "role": "user", "text": "List files."},
    {"id": "c1", "kind": "workflow", "action": "tool_call", "tool": "ls", "call_id": "k1", "text": "ls -a"},
    {"id": "r1", "kind": "environment", "tool": "ls", "call_id": "k1", "success": true, "text": "a.txt\nb.txt"},
    {"id": "a1", "kind": "agent", "role": "assistant", "text": "Two files."}
  ]
}"#;

/// Asserts a successful run with nothing on stderr, and parses stdout as JSON.
fn json_output(run: &Run) -> Value {
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "a clean success");
    serde_json::from_str(&run.stdout).expect("stdout is JSON")
}

/// A session with `chunk` after a valid user message (so the bad one is chunks[1]).
fn with_chunk(chunk: &str) -> String {
    format!(
        r#"{{"chunks": [{{"id": "u0", "kind": "agent", "role": "user", "text": "hi"}}, {chunk}]}}"#
    )
}

// ---- error paths -------------------------------------------------------

/// A test building `$session` from a temp file that must fail with exit 2,
/// name `$needle` on stderr, and match the snapshot `$name`.
macro_rules! schema_error {
    ($name:ident, $session:expr, $needle:expr) => {
        #[test]
        fn $name() {
            let out = build_file(&$session, &[]);
            assert_failed(&out, 2, $needle);
            insta::assert_snapshot!(stringify!($name), out.stderr);
        }
    };
}

schema_error!(
    invalid_json,
    "{\n  \"chunks\": [\n    {\"id\": \"u1\", \"kind\": \"agent\", \"text\": \"hi\",}\n  ]\n}\n",
    "invalid JSON at line 3, column 48: trailing comma"
);
schema_error!(
    unknown_chunk_field,
    with_chunk(r#"{"id": "u1", "kind": "agent", "role": "user", "pined": true}"#),
    r#"chunks[1] (id "u1"): field `pined`: unknown field"#
);
schema_error!(
    missing_id,
    with_chunk(r#"{"kind": "thinking", "text": "hmm"}"#),
    "chunks[1]: field `id`: missing"
);
schema_error!(
    duplicate_id,
    with_chunk(r#"{"id": "u0", "kind": "thinking", "text": "hmm"}"#),
    r#"chunks[1] (id "u0"): field `id`: duplicate"#
);
schema_error!(
    unknown_kind,
    with_chunk(r#"{"id": "t1", "kind": "tool", "text": "ls"}"#),
    r#"unknown kind "tool"; expected one of: system, agent, workflow, delegation, environment, thinking, output"#
);
schema_error!(
    agent_without_role,
    with_chunk(r#"{"id": "a1", "kind": "agent", "text": "ok"}"#),
    r#"chunks[1] (id "a1"): field `role`"#
);
schema_error!(
    wrong_type_pinned,
    with_chunk(r#"{"id": "a1", "kind": "thinking", "text": "x", "pinned": "yes"}"#),
    r#"chunks[1] (id "a1"): field `pinned`: expected a boolean, found a string"#
);
schema_error!(
    role_on_non_agent,
    with_chunk(r#"{"id": "t1", "kind": "thinking", "role": "assistant", "text": "x"}"#),
    r#"chunks[1] (id "t1"): field `role`: only agent chunks take a role"#
);
schema_error!(
    unknown_top_level_field,
    r#"{"chunk": []}"#,
    "invalid session: field `chunk`: unknown field"
);
schema_error!(
    bad_context_management,
    r#"{"context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "most"}]}, "chunks": []}"#,
    "invalid session: field `context_management.edits[0].keep`: invalid value; the `keep`"
);
#[test]
fn a_priority_out_of_range_says_the_range() {
    let range = "expected an integer from -9223372036854775808 to 9223372036854775807";
    for (priority, found) in [
        ("1e30", "found a number outside that range"),
        ("99999999999999999999", "found a number outside that range"),
        ("-99999999999999999999", "found a number outside that range"),
        ("9223372036854775808", "found a number above that range"),
        ("1.5", "found a number with a fraction"),
        (
            "2e3",
            "found a whole number written as a decimal or with an exponent",
        ),
    ] {
        let chunk =
            format!(r#"{{"id": "t1", "kind": "thinking", "text": "x", "priority": {priority}}}"#);
        let out = build_file(&with_chunk(&chunk), &[]);
        assert_failed(
            &out,
            2,
            &format!(r#"chunks[1] (id "t1"): field `priority`: {range}"#),
        );
        assert!(out.stderr.contains(found), "{priority}: {}", out.stderr);
    }
    let lowest = with_chunk(
        r#"{"id": "t1", "kind": "thinking", "text": "x", "priority": -9223372036854775808}"#,
    );
    assert_eq!(build_file(&lowest, &[]).code, 0);
}

#[test]
fn root_not_object() {
    // Refused at its first byte, before reading on (the library's schema
    // error, "field `(root)`: expected an object", is for parsed JSON).
    let out = run(&["build"], " []");
    assert_failed(
        &out,
        2,
        "reading standard input: this is not a session: it starts with '[' (byte 0x5b) at \
         offset 1; a session is a JSON object, starting with `{`",
    );
    insta::assert_snapshot!("root_not_object", out.stderr);
}

#[test]
fn input_not_utf8_via_stdin() {
    let out = run_bytes(&["build", "-"], b"{\"chunks\": [], \"id\": \"\xff\"}");
    assert_failed(
        &out,
        2,
        "reading standard input: not UTF-8: invalid byte at offset 22",
    );
    insta::assert_snapshot!("input_not_utf8", out.stderr);
}

#[test]
fn impossible_budget_says_required_and_available() {
    let text = "lorem ipsum dolor sit amet ".repeat(40);
    let session = format!(
        r#"{{"chunks": [{{"id": "big", "kind": "agent", "role": "user", "pinned": true, "text": "{text}"}}]}}"#
    );
    let out = build_file(&session, &["--max-tokens", "50"]);
    assert_failed(&out, 1, "but only 50 are available");
    let required: usize = out
        .stderr
        .split("needs ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("a required token count");
    assert!(required > 200, "required {required}");
    insta::assert_snapshot!("impossible_budget", out.stderr);
}

#[test]
fn reserve_leaving_no_room() {
    let out = build_file(SMALL, &["--max-tokens", "50", "--reserve", "50"]);
    assert_failed(&out, 2, "leaves no room in max_tokens 50");
    insta::assert_snapshot!("reserve_no_room", out.stderr);
}

#[test]
fn unknown_flag() {
    let out = run(&["build", "--frobnicate"], SMALL);
    assert_failed(&out, 2, "unexpected argument '--frobnicate'");
    insta::assert_snapshot!("unknown_flag", out.stderr);
}

#[test]
fn unknown_output_value() {
    let out = run(&["build", "--output", "yaml"], SMALL);
    assert_failed(
        &out,
        2,
        "[possible values: report, openai, anthropic, text, openai-native, openai-responses, anthropic-native, ai-sdk]",
    );
    insta::assert_snapshot!("unknown_output", out.stderr);
}

#[test]
fn unknown_exclude_kind() {
    let out = run(&["build", "--exclude-kind", "tool"], SMALL);
    assert_failed(&out, 2, r#"unknown kind "tool""#);
    insta::assert_snapshot!("unknown_exclude_kind", out.stderr);
}

#[test]
fn unknown_model_without_max_tokens() {
    let out = build_file(SMALL, &["--model", "llama-3"]);
    assert_failed(&out, 2, r#"model "llama-3" is unknown"#);
    insta::assert_snapshot!("unknown_model", out.stderr);
    // With a budget the same model builds, on an estimate, and says so.
    let ok = build_file(SMALL, &["--model", "llama-3", "--max-tokens", "1000"]);
    assert_eq!(ok.code, 0);
    assert_eq!(
        ok.stderr,
        "warning: model \"llama-3\" is not in the model table; token counts are estimates: \
         estimate(o200k_base*1.6)\n"
    );
    let report: Value = serde_json::from_str(&ok.stdout).expect("stdout is JSON");
    assert_eq!(report["token_count_exact"], false);
    assert_eq!(report["warnings"].as_array().map(Vec::len), Some(1));
}

#[test]
fn an_empty_model_name_is_refused() {
    for command in ["build", "replay"] {
        let out = run(&[command, "--model", "", "--max-tokens", "1000"], SMALL);
        assert_failed(&out, 2, "invalid option `model`: the model name is empty");
    }
    let count = run(&["count", "--model", ""], "hello");
    assert_failed(&count, 2, "the model name is empty");
    insta::assert_snapshot!("empty_model", count.stderr);
}

#[test]
fn nonexistent_input_file() {
    let out = run(&["build", "agent-context-no-such-file.json"], "");
    assert_failed(&out, 2, "reading agent-context-no-such-file.json: ");
    insta::assert_snapshot!("nonexistent_file", out.stderr);
}

// ---- bad input: duplicate keys, endless input, BOM, surrogates, depth ----

schema_error!(
    duplicate_key_text,
    with_chunk(r#"{"id": "a1", "kind": "agent", "role": "assistant", "text": "a", "text": "b"}"#),
    r#"in chunks[1] (id "a1"): key `text` is given twice in one object"#
);
schema_error!(
    duplicate_key_id,
    with_chunk(r#"{"id": "a1", "kind": "thinking", "id": "a2", "text": "hmm"}"#),
    r#"in chunks[1] (id "a1"): key `id` is given twice in one object"#
);
schema_error!(
    duplicate_key_chunks,
    r#"{"chunks": [], "chunks": [{"id": "u1", "kind": "agent", "role": "user", "text": "hi"}]}"#,
    "at the top level: key `chunks` is given twice in one object"
);

#[test]
fn render_refuses_a_key_given_twice() {
    let fragments = run(
        &["render", "--format", "xml"],
        r#"{"fragments": [{"name": "config", "data": {"port": 1, "port": 2}}]}"#,
    );
    assert_failed(
        &fragments,
        2,
        "at `fragments[0].data`: key `port` is given twice in one object",
    );
    let data = run(
        &["render", "--data", "--format", "toml"],
        r#"{"a": 1, "a": 2}"#,
    );
    assert_failed(&data, 2, "at the top level: key `a` is given twice");
}

/// Runs the binary on `stdin`, feeding it from `feed` on another thread if
/// given, and fails the test if the binary has not exited within 10 s
/// (killing it), instead of hanging or eating memory.
fn run_bounded(args: &[&str], stdin: Stdio, feed: Option<&'static [u8]>) -> Run {
    use std::io::Read;
    use std::time::{Duration, Instant};
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-context"))
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agent-context");
    if let (Some(line), Some(mut pipe)) = (feed, child.stdin.take()) {
        // Like `yes`: writes until the reader goes away.
        std::thread::spawn(move || while pipe.write_all(line).is_ok() {});
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll agent-context") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("agent-context {args:?} still running after 10 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let (mut stdout, mut stderr) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    Run {
        code: status.code().expect("exited normally"),
        stdout,
        stderr,
    }
}

fn dev_zero() -> Stdio {
    Stdio::from(std::fs::File::open("/dev/zero").expect("open /dev/zero"))
}

#[test]
fn endless_input_is_refused_at_its_first_byte() {
    let file = run_bounded(&["build", "/dev/zero"], Stdio::null(), None);
    assert_failed(&file, 2, "reading /dev/zero: this is not a session");
    insta::assert_snapshot!("dev_zero_file", file.stderr);

    let piped = run_bounded(&["build"], dev_zero(), None);
    assert_failed(&piped, 2, "it starts with byte 0x00 at offset 0");
    let render = run_bounded(&["render", "--data", "--format", "xml"], dev_zero(), None);
    assert_failed(
        &render,
        2,
        "this is not a JSON value: it starts with byte 0x00",
    );

    let yes = run_bounded(&["build"], Stdio::piped(), Some(b"y\n"));
    assert_failed(&yes, 2, "it starts with 'y' (byte 0x79) at offset 0");
    insta::assert_snapshot!("yes_piped", yes.stderr);
    let replay = run_bounded(&["replay"], Stdio::piped(), Some(b"y\n"));
    assert_failed(&replay, 2, "this is not a session");
}

/// 64 KiB of newlines, what `yes ''` writes.
static NEWLINES: [u8; 1 << 16] = [b'\n'; 1 << 16];

#[test]
fn endless_whitespace_is_read_in_linear_time() {
    // Only the limit stops it: 32 MiB looked at once take well under a
    // second; rescanned after each 8 KiB read, they took over a minute.
    let yes = run_bounded(
        &["build", "--max-input-bytes", "32MiB"],
        Stdio::piped(),
        Some(&NEWLINES),
    );
    assert_failed(&yes, 2, "the input is larger than the limit of 32 MiB");
}

#[test]
fn input_past_the_size_limit_is_refused() {
    // A valid start, then whitespace without end: only the limit stops it.
    let endless = run_bounded(
        &["build", "--max-input-bytes", "64KiB"],
        Stdio::piped(),
        Some(b"{                                                               "),
    );
    assert_failed(
        &endless,
        2,
        "reading standard input: the input is larger than the limit of 64 KiB (65536 bytes); \
         raise it with --max-input-bytes",
    );
    insta::assert_snapshot!("input_too_large", endless.stderr);
    // `count` reads any text, so only the limit applies.
    let count = run_bounded(&["count", "--max-input-bytes", "1000"], dev_zero(), None);
    assert_failed(&count, 2, "larger than the limit of 1000 bytes");
    // Raising the limit lets the same input through.
    let small = format!("{SMALL}{}", " ".repeat(2000));
    assert_failed(
        &run(&["build", "--max-input-bytes", "2KiB"], &small),
        2,
        "limit of 2 KiB",
    );
    json_output(&run(&["build", "--max-input-bytes", "3KiB"], &small));
    let bad = run(&["build", "--max-input-bytes", "12MB"], SMALL);
    assert_failed(&bad, 2, "expected bytes, or a number with KiB, MiB or GiB");
}

#[test]
fn a_byte_order_mark_is_skipped() {
    let plain = json_output(&run(&["build"], SMALL));
    let with_bom = format!("\u{feff}{SMALL}");
    assert_eq!(json_output(&run(&["build"], &with_bom)), plain);
    let file = json_output(&build_file(&with_bom, &[]));
    assert_eq!(file, plain);
    let render = run(
        &["render", "--data", "--format", "toml"],
        "\u{feff}{\"a\": 1}",
    );
    assert_eq!((render.code, render.stdout.as_str()), (0, "a = 1\n"));
}

#[test]
fn a_lone_surrogate_is_named_and_repaired_on_request() {
    let cut =
        with_chunk(r#"{"id": "a1", "kind": "agent", "role": "assistant", "text": "done \ud83e"}"#);
    let strict = build_file(&cut, &[]);
    assert_failed(
        &strict,
        2,
        r#"in chunks[1] (id "a1"), field `text`: lone UTF-16 surrogate escape `\ud83e`"#,
    );
    assert!(
        strict
            .stderr
            .ends_with("\nhint: pass --lossy-unicode to read a lone surrogate as U+FFFD\n"),
        "{}",
        strict.stderr
    );
    insta::assert_snapshot!("lone_surrogate", strict.stderr);
    let lossy = build_file(&cut, &["--lossy-unicode", "--output", "text"]);
    assert_eq!(lossy.code, 0, "{}", lossy.stderr);
    assert!(lossy.stdout.contains("done \u{fffd}\n"), "{}", lossy.stdout);
    let render = run(
        &["render", "--data", "--format", "toml", "--lossy-unicode"],
        r#"{"a": "\udc00x"}"#,
    );
    assert_eq!(render.stdout, "a = \"\u{fffd}x\"\n");
}

/// A session whose one chunk's `data` brings the nesting to `depth` levels.
fn nested_session(depth: usize) -> String {
    let inner = depth - 3; // the session, `chunks`, the chunk
    let data = format!("{}{}", "[".repeat(inner), "]".repeat(inner));
    format!(
        r#"{{"chunks": [{{"id": "deep", "kind": "system", "data": {data}}}, {{"id": "u1", "kind": "agent", "role": "user", "text": "hi"}}]}}"#
    )
}

#[test]
fn nesting_is_read_to_the_limit_and_named_past_it() {
    let limit = crate::common::limits::MAX_JSON_DEPTH;
    json_output(&build_file(&nested_session(limit), &[]));
    let past = build_file(&nested_session(limit + 1), &[]);
    assert_failed(
        &past,
        2,
        r#"in chunks[0] (id "deep"), field `data[0][0][0][0][0][0][0]…`: nested deeper than 256 levels"#,
    );
    insta::assert_snapshot!("nested_too_deep", past.stderr);
}

#[test]
fn a_fragment_past_its_depth_limit_is_named_by_the_fragment_reader() {
    // 65 fragment levels nest 133 JSON levels, past serde_json's own 128.
    let mut fragment = r#"{"name": "leaf", "data": {"k": 1}}"#.to_owned();
    for _ in 1..65 {
        fragment = format!(r#"{{"name": "f", "data": [{fragment}]}}"#);
    }
    let out = run(
        &["render", "--format", "xml"],
        &format!(r#"{{"fragments": [{fragment}]}}"#),
    );
    assert_failed(
        &out,
        2,
        "invalid structured context at `fragments[0].data[0].data[0]",
    );
    assert!(
        out.stderr
            .ends_with("`: nested deeper than 64 levels; flatten the data\n"),
        "{}",
        out.stderr
    );
}

#[test]
fn anthropic_output_needs_a_turn() {
    let session = r#"{"system_prompt": "Be brief.",
      "chunks": [{"id": "s1", "kind": "system", "text": "Repo: acme."}]}"#;
    let out = build_file(session, &["--output", "anthropic"]);
    assert_failed(
        &out,
        2,
        "Anthropic needs at least one user or assistant message",
    );
    insta::assert_snapshot!("anthropic_no_turn", out.stderr);
    // OpenAI takes a system message alone.
    json_output(&build_file(session, &["--output", "openai"]));
}

// util-linux's `script` (BSD's takes other flags).
#[cfg(target_os = "linux")]
#[test]
fn a_terminal_on_standard_input_gets_a_hint() {
    // `script` gives the binary a terminal; Ctrl-D on it ends the input.
    let command = format!("'{}' build", env!("CARGO_BIN_EXE_agent-context"));
    // Debian and the CI have util-linux: a missing `script` fails the test
    // rather than skipping it unseen.
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| {
            panic!(
                "cannot run util-linux's `script` to open a terminal ({error}); install util-linux"
            )
        });
    let _ = child.stdin.take().unwrap().write_all(b"\x04");
    let output = child.wait_with_output().expect("wait for script");
    let terminal = String::from_utf8_lossy(&output.stdout);
    assert!(
        terminal.starts_with(
            "agent-context: reading a session from standard input; pipe it in or pass a FILE \
             (end typed input with Ctrl-D)\r\nerror: invalid JSON at line 1, column 1: the input \
             is empty"
        ),
        "{terminal:?}"
    );
    assert_eq!(output.status.code(), Some(2));
}

// ---- success paths -----------------------------------------------------

#[test]
fn build_report_is_json() {
    let out = build_file(SMALL, &["--output", "report"]);
    let report = json_output(&out);
    assert_eq!(
        report["included"],
        serde_json::json!(["u1", "c1", "r1", "a1"])
    );
    assert_eq!(report["excluded"], serde_json::json!([]));
    assert_eq!(report["token_count_exact"], true);
    let message_tokens: u64 = report["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["tokens"].as_u64().unwrap())
        .sum();
    // Each message's tokens include its framing; the reply priming adds 3.
    assert_eq!(report["token_count"].as_u64().unwrap(), message_tokens + 3);
    insta::assert_snapshot!("build_report", out.stdout);
}

#[test]
fn build_openai_from_stdin() {
    let out = run(&["build", "-", "--output", "openai"], SMALL);
    let value = json_output(&out);
    let roles: Vec<&str> = value["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user", "assistant"]);
    insta::assert_snapshot!("build_openai", out.stdout);
}

#[test]
fn build_anthropic_puts_system_apart() {
    let out = build_file(SMALL, &["--output", "anthropic"]);
    let value = json_output(&out);
    assert_eq!(value["system"], "You are terse.");
    assert_eq!(value["messages"][0]["role"], "user");
    insta::assert_snapshot!("build_anthropic", out.stdout);
}

#[test]
fn build_anthropic_starts_with_user_when_history_does_not() {
    let session =
        r#"{"chunks": [{"id": "a1", "kind": "agent", "role": "assistant", "text": "Hello."}]}"#;
    let out = run(&["build", "--output", "anthropic"], session);
    let value = json_output(&out);
    assert_eq!(
        value["messages"][0],
        serde_json::json!({"role": "user", "content": "<history_start/>"})
    );
    assert_eq!(value["messages"][1]["role"], "assistant");
    assert!(
        value.get("system").is_none(),
        "no system key without a system message"
    );
}

#[test]
fn build_text() {
    let out = build_file(SMALL, &["--output", "text"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    assert!(
        out.stdout
            .starts_with("### system\nYou are terse.\n\n### user\n<user_message id=\"u1\">")
    );
    insta::assert_snapshot!("build_text", out.stdout);
}

#[test]
fn explain_goes_to_stderr_only() {
    let plain = build_file(SMALL, &["--output", "text"]);
    let out = build_file(SMALL, &["--output", "text", "--explain"]);
    assert_eq!(out.code, 0);
    assert_eq!(out.stdout, plain.stdout, "--explain must not change stdout");
    assert!(out.stderr.starts_with("gpt-4o: "), "{}", out.stderr);
    for id in ["u1", "c1", "r1", "a1"] {
        assert!(
            out.stderr.contains(&format!("\n  {id}  ")),
            "{id} missing from {}",
            out.stderr
        );
    }
    insta::assert_snapshot!("build_explain_stderr", out.stderr);
}

#[test]
fn count_prints_a_bare_integer() {
    let out = run(&["count"], "hello world");
    assert_eq!(
        (out.code, out.stderr.as_str(), out.stdout.as_str()),
        (0, "", "2\n")
    );
    let file = TempFile::new("hello world");
    let from_file = run(&["count", file.path()], "");
    assert_eq!(from_file.stdout, "2\n");
}

/// A long text is counted in shares on several threads, the same count on
/// any number of them (an estimate is counted whole, never in shares).
#[test]
fn count_gives_one_figure_on_any_number_of_threads() {
    use agent_context::tokens::{Encoding, TiktokenCounter, TokenCounter};
    let line = "The build log line 42: ok, 3 warnings\n  at src/lib.rs:10 {\"k\": [1, 2]}\n";
    let text = line.repeat(3_000_000 / line.len());
    let file = TempFile::new(&text);
    let exact = TiktokenCounter::new(Encoding::O200kBase)
        .unwrap()
        .count(&text);
    for threads in ["1", "2", "3", "4"] {
        let out = run(&["count", file.path(), "--threads", threads], "");
        assert_eq!(out.stdout, format!("{exact}\n"), "--threads {threads}");
        let estimate = run(
            &[
                "count",
                file.path(),
                "--threads",
                threads,
                "--model",
                "claude-sonnet-4",
            ],
            "",
        );
        assert_eq!(estimate.stdout, format!("{}\n", (exact * 8).div_ceil(5)));
    }
    assert_failed(&run(&["count", "--threads", "0"], "x"), 2, "--threads");
}

#[test]
fn count_json_is_exact_for_openai_models() {
    let out = run(&["count", "--json"], "hello world");
    let value = json_output(&out);
    let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["model", "encoding", "tokens", "exact"]);
    assert_eq!(
        value,
        serde_json::json!({"model": "gpt-4o", "encoding": "o200k_base", "tokens": 2, "exact": true})
    );
    insta::assert_snapshot!("count_json", out.stdout);
}

#[test]
fn count_json_estimates_for_claude() {
    let file = TempFile::new("hello world");
    let out = run(
        &["count", file.path(), "--model", "claude-sonnet-4", "--json"],
        "",
    );
    assert_eq!(out.code, 0);
    assert_eq!(
        out.stderr,
        "warning: model \"claude-sonnet-4\" has no public tokenizer; token counts are \
         estimates: estimate(o200k_base*1.6)\n"
    );
    let value: Value = serde_json::from_str(&out.stdout).expect("stdout is JSON");
    assert_eq!(value["exact"], false);
    assert_eq!(value["model"], "claude-sonnet-4");
    // "hello world" is 2 tokens in o200k_base; the estimate is 1.6 times that, rounded up.
    assert_eq!(value["tokens"], 4, "the estimate is ceil(1.6 x o200k)");
    insta::assert_snapshot!("count_json_claude", out.stdout);
}

#[test]
fn count_calls_a_look_alike_an_estimate_and_names_it() {
    for model in ["gpt-4.2", "gpt-4x", "gpt-4o1"] {
        let out = run(&["count", "--json", "--model", model], "hello world");
        assert_eq!(out.code, 0);
        assert!(
            out.stderr.starts_with(&format!(
                "warning: model {model:?} is not in the model table"
            )),
            "{}",
            out.stderr
        );
        let value: Value = serde_json::from_str(&out.stdout).expect("stdout is JSON");
        assert_eq!(value["exact"], false, "{model}");
    }
}

#[test]
fn estimate_factor_scales_estimates_only() {
    let tokens = |extra: &[&str]| {
        let mut args = vec!["count", "--model", "claude-sonnet-4"];
        args.extend_from_slice(extra);
        let out = run(&args, "hello world");
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stdout
    };
    // "hello world" is 2 tokens in o200k_base.
    assert_eq!(tokens(&["--estimate-factor", "1.0"]), "2\n");
    assert_eq!(tokens(&[]), "4\n");
    assert_eq!(tokens(&["--estimate-factor", "3"]), "6\n");
    let exact = run(&["count", "--estimate-factor", "3"], "hello world");
    assert_eq!(exact.stdout, "2\n");
    assert_eq!(
        exact.stderr,
        "warning: --estimate-factor 3.0 has no effect: model \"gpt-4o\" is counted exactly\n"
    );
}

#[test]
fn estimate_factor_below_one_is_rejected() {
    for command in ["count", "build"] {
        let out = run(&[command, "--estimate-factor", "0.9"], "hello world");
        assert_failed(
            &out,
            2,
            "the estimate factor must be a number from 1.0 to 16, got 0.9",
        );
    }
    let out = run(&["count", "--estimate-factor", "lots"], "hello world");
    assert_failed(&out, 2, "expected a number such as 1.6");
}

#[test]
fn estimate_factor_above_the_maximum_says_so() {
    for value in ["16.0001", "1e10"] {
        let out = run(&["count", "--estimate-factor", value], "hello world");
        assert_failed(&out, 2, "at most 16 is accepted");
        assert!(!out.stderr.contains("below 1.0"), "{}", out.stderr);
    }
}

#[test]
fn build_estimates_with_the_given_factor() {
    let report = |extra: &[&str]| {
        let mut args = vec!["--model", "claude-sonnet-4"];
        args.extend_from_slice(extra);
        let out = build_file(SMALL, &args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        serde_json::from_str::<Value>(&out.stdout).expect("stdout is JSON")
    };
    let default = report(&[]);
    let doubled = report(&["--estimate-factor", "3.2"]);
    assert_eq!(default["encoding"], "estimate(o200k_base*1.6)");
    assert_eq!(doubled["encoding"], "estimate(o200k_base*3.2)");
    let count = |report: &Value| report["token_count"].as_u64().unwrap();
    assert!(
        count(&doubled) > count(&default) * 3 / 2,
        "{default} {doubled}"
    );
    let exact = build_file(SMALL, &["--estimate-factor", "2"]);
    assert_eq!(exact.code, 0);
    assert!(
        exact.stderr.contains("--estimate-factor 2.0 has no effect"),
        "{}",
        exact.stderr
    );
}

#[test]
fn help_goes_to_stdout_with_success() {
    let out = run(&["build", "--help"], "");
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    assert!(out.stdout.contains("--max-tokens <MAX_TOKENS>"));
}

/// The possible values `--help` of `command` lists under `flag`, each with
/// whether it has a description.
fn listed_values(command: &str, flag: &str) -> Vec<(String, bool)> {
    let out = run(&[command, "--help"], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let after = out
        .stdout
        // Indented: the flag's own entry, not the usage line.
        .split(&format!("  {flag} <"))
        .nth(1)
        .unwrap_or_default();
    let values = after.split("Possible values:").nth(1).unwrap_or_default();
    let values = &values[..values.find("\n\n").unwrap_or(values.len())];
    values
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .map(|value| match value.split_once(':') {
            Some((name, help)) => (name.to_owned(), !help.trim().is_empty()),
            None => (value.to_owned(), false),
        })
        .collect()
}

#[test]
fn help_describes_every_output_and_lists_every_format() {
    let outputs = listed_values("build", "--output");
    let names: Vec<&str> = outputs.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, common::OUTPUTS);
    assert!(
        outputs.iter().all(|(_, described)| *described),
        "{outputs:?}"
    );
    for (command, flag, values) in [
        (
            "build",
            "--content-format",
            &["gfm", "commonmark", "xml"][..],
        ),
        (
            "build",
            "--fragments-format",
            &["xml", "markdown", "toml", "toon"][..],
        ),
        (
            "render",
            "--format",
            &["xml", "markdown", "toml", "toon"][..],
        ),
        ("content", "--format", &["gfm", "commonmark", "xml"][..]),
    ] {
        let listed = listed_values(command, flag);
        let names: Vec<&str> = listed.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, values, "{command} {flag}");
        assert!(
            listed.iter().all(|(_, described)| *described),
            "{command} {flag}: {listed:?}"
        );
    }
    // Listing the values takes none of the aliases away.
    let md = run(
        &["render", "--format", "MD"],
        r#"{"fragments": [{"name": "a", "data": 1}]}"#,
    );
    assert_eq!(md.stdout, "## A\n- 1\n", "{}", md.stderr);
    let unknown = run(&["build", "--content-format", "html"], SMALL);
    assert_failed(
        &unknown,
        2,
        "unknown content format \"html\"; expected gfm, commonmark or xml",
    );
}

#[test]
fn openai_output_gives_the_system_message_the_native_role() {
    for (model, role) in [
        ("o3", "developer"),
        ("gpt-5-mini", "developer"),
        ("gpt-4o", "system"),
    ] {
        let text = run(&["build", "--output", "openai", "--model", model], SMALL);
        let native = run(
            &["build", "--output", "openai-native", "--model", model],
            SMALL,
        );
        for out in [&text, &native] {
            let body: Value = serde_json::from_str(&out.stdout).expect("JSON");
            assert_eq!(body["messages"][0]["role"], role, "{model}: {}", out.stderr);
        }
    }
}

// ---- structured context ------------------------------------------------

const CONFIG: &str = r#"{"fragments": [{"name": "config", "data": {"debug": true, "timeout": 30,
  "database": {"host": "localhost", "port": 5432}}}]}"#;

#[test]
fn render_prints_each_format() {
    let xml = run(&["render", "-", "--format", "xml"], CONFIG);
    assert_eq!(xml.code, 0, "{}", xml.stderr);
    assert_eq!(
        xml.stdout,
        "<config>\n  <debug>true</debug>\n  <timeout>30</timeout>\n  <database>\n    \
         <host>localhost</host>\n    <port>5432</port>\n  </database>\n</config>\n"
    );
    let toon = run(&["render", "--format", "toon", "--indent", "4"], CONFIG);
    assert!(
        toon.stdout.starts_with("config:\n    debug: true\n"),
        "{}",
        toon.stdout
    );
    let toml = run(&["render", "--format", "toml"], CONFIG);
    assert!(
        toml.stdout
            .contains("[config.database]\nhost = \"localhost\""),
        "{}",
        toml.stdout
    );
    let data = run(
        &[
            "render",
            "--data",
            "--format",
            "toon",
            "--delimiter",
            "pipe",
        ],
        r#"[{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]"#,
    );
    assert_eq!(data.stdout, "[2|]{a|b}:\n  1|x\n  2|y\n");
}

#[test]
fn render_refuses_options_its_format_does_not_use() {
    let delimiter = run(
        &["render", "--data", "--format", "xml", "--delimiter", "tab"],
        "[1, 2]",
    );
    assert_failed(
        &delimiter,
        2,
        "invalid option `--delimiter`: --format xml takes no --delimiter; it applies to toon \
         only, so drop it",
    );
    insta::assert_snapshot!("render_unused_delimiter", delimiter.stderr);
    let indent = run(&["render", "--format", "markdown", "--indent", "4"], CONFIG);
    assert_failed(
        &indent,
        2,
        "--format markdown takes no --indent; it applies to xml and toon only",
    );
    let toml = run(&["render", "--format", "toml", "--delimiter", ","], CONFIG);
    assert_failed(&toml, 2, "--format toml takes no --delimiter");
    let xml = run(&["render", "--format", "xml", "--indent", "0"], CONFIG);
    assert_eq!(xml.code, 0, "{}", xml.stderr);
    assert!(
        xml.stdout.starts_with("<config>\n<debug>"),
        "{}",
        xml.stdout
    );
    let wide = run(&["render", "--format", "toon", "--indent", "100"], CONFIG);
    assert_failed(&wide, 2, "100 spaces is too wide; use 1 to 16 for toon");
}

#[test]
fn render_errors() {
    let not_fragments = run(&["render", "--format", "xml"], r#"{"config": 1}"#);
    assert_failed(
        &not_fragments,
        2,
        "invalid structured context at `(root)`: a fragments document is an object with the \
         one key \"fragments\"",
    );
    insta::assert_snapshot!("render_not_fragments", not_fragments.stderr);
    let empty = run(&["render", "--format", "xml"], "{}");
    assert_failed(&empty, 2, "but it is empty; pass --data");
    let extra = run(
        &["render", "--format", "xml"],
        r#"{"fragments": [], "extra": 1}"#,
    );
    assert_failed(&extra, 2, "but it has the key \"extra\"");
    let bad_format = run(&["render", "--format", "yaml"], CONFIG);
    assert_failed(&bad_format, 2, "unknown format \"yaml\"");
    let bad_fragment = run(
        &["render", "--format", "xml"],
        r#"{"fragments": [{"name": "x"}]}"#,
    );
    assert_failed(&bad_fragment, 2, "fragments[0]");
    insta::assert_snapshot!("render_bad_fragment", bad_fragment.stderr);
}

#[test]
fn build_renders_session_fragments_into_the_system_message() {
    let session = r#"{"system_prompt": "Be brief.",
      "fragments": [{"name": "role", "data": "reviewer"}],
      "chunks": [{"id": "u1", "kind": "agent", "role": "user", "text": "hi"}]}"#;
    let out = build_file(
        session,
        &["--output", "openai", "--fragments-format", "markdown"],
    );
    let value = json_output(&out);
    assert_eq!(
        value["messages"][0]["content"],
        "Be brief.\n\n## Role\n- reviewer"
    );
}

#[test]
fn numbers_past_64_bits_reach_every_output_with_their_digits() {
    let data = common::wide_numbers_json();
    let session = format!(
        r#"{{"fragments": [{{"name": "account", "data": {data}}}], "chunks": [
          {{"id": "u1", "kind": "agent", "role": "user",
            "content": [{{"type": "json", "data": {data}}}]}},
          {{"id": "w1", "kind": "workflow", "tool": "pay", "call_id": "k1", "data": {data}}},
          {{"id": "e1", "kind": "environment", "call_id": "k1", "data": {data}}}
        ]}}"#
    );
    for output in common::OUTPUTS {
        let run = build_file(&session, &["--output", output]);
        assert_eq!(run.code, 0, "{output}: {}", run.stderr);
        common::assert_shows_wide_numbers(&run.stdout);
    }
    for format in ["xml", "markdown", "toml", "toon"] {
        let run = build_file(
            &session,
            &["--output", "text", "--fragments-format", format],
        );
        assert_eq!(run.code, 0, "{format}: {}", run.stderr);
        let system = run.stdout.split("### user").next().unwrap_or_default();
        common::assert_shows_wide_numbers(system);
    }
    // The call's arguments, as OpenAI reads them, hold the numbers.
    let native = json_output(&build_file(&session, &["--output", "openai-native"]));
    let arguments = native["messages"][2]["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .unwrap();
    common::assert_holds_wide_numbers(&serde_json::from_str(arguments).unwrap(), false);
    // Content blocks, rendered alone, show them in every format.
    let block = format!(r#"{{"type": "json", "data": {data}}}"#);
    for format in ["gfm", "commonmark", "xml"] {
        let run = run(&["content", "--format", format], &block);
        assert_eq!(run.code, 0, "{format}: {}", run.stderr);
        common::assert_shows_wide_numbers(&run.stdout);
    }
    let wrong = format!(r#"{{"type": "json", "data": {data}, "extra": 1}}"#);
    assert_failed(
        &run(&["content"], &wrong),
        2,
        "invalid content at `$`: unknown field `extra`, expected `data` or `text`\n",
    );
}

// ---- budget policy flags -----------------------------------------------

#[test]
fn caps_from_the_command_line() {
    let long = format!(
        r#"{{"chunks": [{{"id": "u1", "kind": "agent", "role": "user", "text": "go"}},
        {{"id": "c1", "kind": "workflow", "call_id": "k", "text": "ls"}},
        {{"id": "r1", "kind": "environment", "call_id": "k", "text": "{}"}}]}}"#,
        "file.txt ".repeat(300)
    );
    let capped = json_output(&build_file(&long, &["--cap", "tool_result=100"]));
    assert_eq!(capped["truncated"][0]["id"], "r1");
    assert_eq!(capped["truncated"][0]["cap"], 100);
    // The cap bounds the whole rendered chunk, as the report counts it.
    let after = capped["truncated"][0]["tokens_after"].as_u64().unwrap();
    assert!((90..=100).contains(&after), "{after}");
    assert_eq!(capped["decisions"][2]["decision"], "truncated");
    assert_eq!(capped["decisions"][2]["cap"], 100);
    assert_eq!(capped["decisions"][2]["tokens"], after);
    let lifted = json_output(&build_file(&long, &["--cap", "environment=none"]));
    assert_eq!(lifted["truncated"], serde_json::json!([]));
    let bad = build_file(&long, &["--cap", "tool_result"]);
    assert_failed(&bad, 2, "expected NAME=N");
    insta::assert_snapshot!("bad_cap", bad.stderr);
    let no_name = build_file(&long, &["--cap", "=100"]);
    assert_failed(&no_name, 2, "the name before `=` is missing");
    let no_count = build_file(&long, &["--cap", "tool_result=lots"]);
    assert_failed(&no_count, 2, "\"lots\" is not a token count");
    // The count follows the last `=`: an id may hold one.
    let odd_id = long.replace(r#""id": "r1","#, r#""id": "r=1","#);
    let by_odd_id = json_output(&build_file(&odd_id, &["--cap", "id:r=1=100"]));
    assert_eq!(by_odd_id["truncated"][0]["id"], "r=1");
    let tooled = long.replace(r#""id": "r1","#, r#""id": "r1", "tool": "bash","#);
    let by_tool = json_output(&build_file(&tooled, &["--cap", "tool:bash=100"]));
    assert_eq!(by_tool["truncated"][0]["id"], "r1");
    assert_eq!(by_tool["truncated"][0]["cap"], 100);
    let by_id = build_file(&tooled, &["--cap", "id:r1=120", "--cap", "tool:bash=100"]);
    assert_eq!(json_output(&by_id)["truncated"][0]["cap"], 120);
    let no_such_tool = build_file(&tooled, &["--cap", "tool:bsah=100"]);
    assert_eq!(no_such_tool.code, 0, "{}", no_such_tool.stderr);
    assert_eq!(
        no_such_tool.stderr,
        "warning: cap on tool \"bsah\": no chunk has this tool, so it caps nothing\n"
    );
    let report: Value = serde_json::from_str(&no_such_tool.stdout).unwrap();
    assert_eq!(report["truncated"], serde_json::json!([]));
    let bare_tool = build_file(&long, &["--cap", "bash=100"]);
    assert_failed(&bare_tool, 2, "or tool:NAME for the chunks of a tool");
    let typo = build_file(&long, &["--cap", "tool_results=100"]);
    assert_failed(&typo, 2, "unknown cap target \"tool_results\"");
    insta::assert_snapshot!("unknown_cap_target", typo.stderr);
    let below_floor = build_file(&long, &["--cap", "tool_result=0"]);
    assert_eq!(below_floor.code, 0, "{}", below_floor.stderr);
    assert_eq!(
        below_floor.stderr,
        "warning: cap of 0 tokens on tag tool_result is below the floor of 64 (a tag, its \
         attributes and the cut marker need room): 64 applies\n"
    );
    let report: Value = serde_json::from_str(&below_floor.stdout).unwrap();
    assert_eq!(report["truncated"][0]["cap"], 64);
    let long_tool = long.replace(
        r#""id": "r1","#,
        &format!(
            r#""id": "r1", "tool": "{}","#,
            "a_long_tool_name_".repeat(20)
        ),
    );
    let too_small = build_file(&long_tool, &["--cap", "tool_result=64"]);
    assert_failed(&too_small, 2, "chunks[2] (id \"r1\")");
    insta::assert_snapshot!("cap_too_small", too_small.stderr);
    // A cap below the floor that then fails says what was asked, since the
    // floor's warning is not printed when the build fails.
    let too_small = build_file(&long_tool, &["--cap", "tool_result=0"]);
    assert_failed(
        &too_small,
        2,
        "cap of 0 tokens (raised to the floor of 64) on chunks[2]",
    );
    insta::assert_snapshot!("cap_too_small_below_floor", too_small.stderr);
    let bad_low_water = build_file(&long, &["--low-water", "1.5"]);
    assert_failed(&bad_low_water, 2, "low_water");
}

// ---- context management --------------------------------------------------

/// Anthropic's example `context_management`: both edits, every field.
const MANAGEMENT: &str = r#"{"edits": [
  {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}},
  {"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 100000},
   "keep": {"type": "tool_uses", "value": 3}, "clear_at_least": {"type": "input_tokens", "value": 5000},
   "exclude_tools": ["memory"], "clear_tool_inputs": true}
]}"#;

/// The report of a build under [`MANAGEMENT`] of a session with no
/// `memory` tool, which it excludes: it succeeds, warning of that.
fn output_warning_of_memory(run: &Run) -> Value {
    let warning = "warning: context_management.edits[1].exclude_tools names tool \"memory\": no \
                   chunk has this tool, so it excludes nothing\n";
    assert_eq!((run.code, run.stderr.as_str()), (0, warning));
    serde_json::from_str(&run.stdout).expect("stdout is JSON")
}

/// `build` with `--context-management VALUE`.
fn build_managed(value: &str) -> Run {
    build_file(SMALL, &["--context-management", value])
}

/// Two tool uses after the user's message: the older one is history.
const TWO_TOOL_USES: &str = r#"{"chunks": [
  {"id": "u1", "kind": "agent", "role": "user", "text": "List and read."},
  {"id": "c1", "kind": "workflow", "action": "tool_call", "tool": "ls", "call_id": "k1", "text": "ls"},
  {"id": "r1", "kind": "environment", "tool": "ls", "call_id": "k1", "text": "a.txt"},
  {"id": "c2", "kind": "workflow", "action": "tool_call", "tool": "cat", "call_id": "k2", "text": "cat a.txt"},
  {"id": "r2", "kind": "environment", "tool": "cat", "call_id": "k2", "text": "hello"}
]}"#;

/// Clears every tool use but the newest once there are two.
const CLEAR_OLD_USES: &str = r#"{"edits": [{"type": "clear_tool_uses_20250919",
  "trigger": {"type": "tool_uses", "value": 1}, "keep": {"type": "tool_uses", "value": 1}}]}"#;

/// What a build of `session` with `flags` did to the older tool result
/// `r1`, and how many tool uses its applied edits cleared.
fn older_result(session: &str, flags: &[&str]) -> (Value, Value) {
    let report = json_output(&build_file(session, flags));
    let r1 = &report["decisions"][2];
    assert_eq!(r1["id"], "r1");
    let cleared = report["applied_edits"][0]["cleared_tool_uses"].clone();
    (r1["decision"].clone(), cleared)
}

#[test]
fn context_management_is_taken_inline_or_from_a_file() {
    let kept = (Value::from("kept"), Value::Null);
    let stubbed = (Value::from("stubbed"), Value::from(1));
    assert_eq!(older_result(TWO_TOOL_USES, &[]), kept);
    // Inline after whitespace, as a shell's here-document leaves it.
    let inline = format!("\n  {CLEAR_OLD_USES}");
    assert_eq!(
        older_result(TWO_TOOL_USES, &["--context-management", &inline]),
        stubbed
    );
    let file = TempFile::new(CLEAR_OLD_USES);
    let from_file = ["--context-management", file.path()];
    assert_eq!(older_result(TWO_TOOL_USES, &from_file), stubbed);
    // The flag replaces the session's own.
    let managed = TWO_TOOL_USES.replacen(
        '{',
        &format!("{{\"context_management\": {CLEAR_OLD_USES},"),
        1,
    );
    assert_eq!(older_result(&managed, &[]), stubbed);
    let nothing = ["--context-management", r#"{"edits": []}"#];
    assert_eq!(older_result(&managed, &nothing), kept);
    // Anthropic's own example is taken as it is.
    assert_eq!(
        output_warning_of_memory(&build_managed(MANAGEMENT))["included"][0],
        "u1"
    );
    // The file is read: the same object with a typo in it is refused.
    let typo = TempFile::new(&MANAGEMENT.replace("exclude_tools", "exclude_tool"));
    assert_failed(
        &build_managed(typo.path()),
        2,
        &format!(
            "invalid option `--context-management`: file {:?}, at `edits[1]`: unknown field \
             `exclude_tool`",
            typo.path()
        ),
    );
    let replay = run(&["replay", "-", "--context-management", file.path()], SMALL);
    assert_eq!(replay.code, 0, "{}", replay.stderr);
    assert_eq!(replay.stdout.lines().count(), 2, "{}", replay.stdout);
}

#[test]
fn a_bad_context_management_flag_exits_2_naming_it() {
    let cases = [
        (
            r#"{"edits": ["#,
            "invalid option `--context-management`: the inline JSON: invalid JSON at line 1",
        ),
        (
            r#"{"edits": [{"type": "clear_everything"}]}"#,
            "the inline JSON, at `edits[0].type`: unknown variant `clear_everything`, expected \
             one of `clear_tool_uses_20250919`, `clear_thinking_20251015`, `compact_20260112`",
        ),
        (
            r#" {"edits": [], "edits": []}"#,
            "key `edits` is given twice",
        ),
        (
            "no-such-management.json",
            "invalid option `--context-management`: cannot read file \
             \"no-such-management.json\"",
        ),
        ("-", "standard input is not read for it"),
    ];
    for (value, needle) in cases {
        assert_failed(&build_managed(value), 2, needle);
    }
    let array = TempFile::new("[{\"edits\": []}]");
    let refused = build_managed(array.path());
    assert_failed(
        &refused,
        2,
        &format!("file {:?} is not a JSON object", array.path()),
    );
    let inline = build_managed(r#"{"edits": [{"type": "clear_tool_uses_20250919", "keep": 3}]}"#);
    assert_failed(&inline, 2, "--context-management");
    insta::assert_snapshot!("bad_context_management_flag", inline.stderr);
    let replay = run(&["replay", "-", "--context-management", "{"], SMALL);
    assert_failed(&replay, 2, "invalid option `--context-management`");
}

#[test]
fn json_that_is_no_object_is_refused_as_such_not_read_as_a_path() {
    for value in ["null", "[]", "\"x\"", "5", " true", "[1"] {
        let refused = build_managed(value);
        assert_failed(
            &refused,
            2,
            "invalid option `--context-management`: the inline JSON",
        );
        assert!(
            !refused.stderr.contains("cannot read file"),
            "{value}: {}",
            refused.stderr
        );
    }
    for value in ["", "  "] {
        assert_failed(&build_managed(value), 2, "the value is empty");
    }
    // A file of that name is still read.
    let dir = TempDir::new("management-named-null");
    std::fs::write(dir.join("null"), CLEAR_OLD_USES).unwrap();
    let named_null = Command::new(env!("CARGO_BIN_EXE_agent-context"))
        .args(["build", "-", "--context-management", "null"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(TWO_TOOL_USES.as_bytes())?;
            child.wait_with_output()
        })
        .expect("run agent-context");
    let report: Value = serde_json::from_slice(&named_null.stdout).unwrap();
    assert_eq!(report["applied_edits"][0]["cleared_tool_uses"], 1);
}

#[test]
fn edits_naming_no_chunk_s_tool_warn_as_caps_do() {
    // A tool named again, in the same edit or a later one, is named once.
    let edits = r#"{"edits": [{"type": "clear_tool_uses_20250919",
        "exclude_tools": ["ls", "no_such_tool", "no_such_tool"],
        "clear_tool_inputs": ["also_none"]},
        {"type": "clear_tool_uses_20250919", "exclude_tools": ["no_such_tool"]}]}"#;
    let warned = build_file(TWO_TOOL_USES, &["--context-management", edits]);
    assert_eq!(warned.code, 0, "{}", warned.stderr);
    assert_eq!(
        warned.stderr,
        "warning: context_management.edits[0].exclude_tools names tool \"no_such_tool\": no \
         chunk has this tool, so it excludes nothing\n\
         warning: context_management.edits[0].clear_tool_inputs names tool \"also_none\": no \
         chunk has this tool, so it clears nothing\n"
    );
    let known = r#"{"edits": [{"type": "clear_tool_uses_20250919", "exclude_tools": ["ls"],
        "clear_tool_inputs": ["cat"]}]}"#;
    let quiet = build_file(TWO_TOOL_USES, &["--context-management", known]);
    assert_eq!((quiet.code, quiet.stderr.as_str()), (0, ""));
}

#[test]
fn a_session_round_trips_its_context_management() {
    let session = format!(
        r#"{{"system_prompt": "Be brief.", "context_management": {MANAGEMENT},
        "chunks": [{{"id": "u1", "kind": "agent", "role": "user", "text": "hi"}}]}}"#
    );
    let state = agent_context::MemoryState::from_json_str(&session).unwrap();
    let written = serde_json::to_string(&state).unwrap();
    let given: Value = serde_json::from_str(&session).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&written).unwrap(), given);
    let again = agent_context::MemoryState::from_json_str(&written).unwrap();
    assert_eq!(again, state);
    let report = output_warning_of_memory(&build_file(&session, &[]));
    assert_eq!(report["included"][0], "u1");
}

// ---- replay --------------------------------------------------------------

#[test]
fn replay_warns_once_as_build_warns() {
    let flags = [
        "--model",
        "claude-sonnet-4-5",
        "--max-tokens",
        "1000000",
        "--cap",
        "tool:ghost=500",
        "--estimate-factor",
        "1.6",
    ];
    let built = run(&[&["build", "-"][..], &flags].concat(), SMALL);
    let replayed = run(&[&["replay", "-"][..], &flags].concat(), SMALL);
    assert_eq!((built.code, replayed.code), (0, 0), "{}", replayed.stderr);
    assert!(
        built.stderr.contains("cap on tool \"ghost\""),
        "{}",
        built.stderr
    );
    assert_eq!(replayed.stderr, built.stderr);
    let exact = run(&["replay", "-", "--estimate-factor", "1.6"], SMALL);
    assert_eq!(
        exact.stderr,
        "warning: --estimate-factor 1.6 has no effect: model \"gpt-4o\" is counted exactly\n"
    );
}

#[test]
fn replay_prints_a_line_per_turn_and_a_summary() {
    let run_replay = |extra: &[&str]| {
        let mut args = vec!["replay", "-"];
        args.extend_from_slice(extra);
        run(&args, SMALL)
    };
    let replay = run_replay(&[]);
    assert_eq!(replay.code, 0, "{}", replay.stderr);
    let lines: Vec<Value> = replay
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // SMALL has one assistant chunk, last: one turn, then the summary.
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["turn"], 1);
    assert_eq!(lines[0]["chunks"], 4);
    for key in ["token_count", "excluded", "build_us", "new_tokens_counted"] {
        assert!(lines[0][key].is_u64(), "{key}");
    }
    assert!(
        lines[0]["stable_prefix_tokens"].is_null(),
        "nothing to compare on turn 1"
    );
    assert_eq!(lines[1]["summary"]["turns"], 1);
    let every = run_replay(&["--every", "1"]);
    let turns: Vec<Value> = every
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(turns.len(), 5, "four turns and the summary");
    for turn in &turns[1..4] {
        assert!(turn["stable_prefix_tokens"].as_u64().unwrap() > 0, "{turn}");
    }
    // Four turns: one a quarter, each quarter's median and mean its time.
    let quarters = turns[4]["summary"]["quarters"].as_array().unwrap();
    assert_eq!(quarters.len(), 4);
    for (quarter, turn) in quarters.iter().zip(&turns[..4]) {
        assert_eq!(quarter["median_build_us"], turn["build_us"]);
        assert_eq!(quarter["mean_build_us"], turn["build_us"]);
        let new = turn["new_tokens_counted"].as_u64().unwrap();
        assert_eq!(quarter["median_new_tokens"], new);
        let per_1k = turn["build_us"].as_f64().unwrap() * 1000.0 / new as f64;
        match new {
            0 => assert!(quarter["median_us_per_1k_new_tokens"].is_null()),
            _ => assert_eq!(
                quarter["median_us_per_1k_new_tokens"],
                (per_1k * 10.0).round() / 10.0
            ),
        }
    }
    assert_eq!(lines[1]["summary"]["quarters"], serde_json::json!([]));
    let cached: u64 = turns[..4]
        .iter()
        .map(|t| t["new_tokens_counted"].as_u64().unwrap())
        .sum();
    let cold = run_replay(&["--every", "1", "--no-cache"]);
    let cold_total = cold
        .stdout
        .lines()
        .last()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .unwrap();
    assert!(
        cold_total["summary"]["tokens_counted"].as_u64().unwrap() > cached,
        "cold counts everything each turn"
    );
    assert_failed(&run_replay(&["--every", "0"]), 2, "--every");
}

#[test]
fn replay_reports_bad_input_in_a_late_turn_before_the_first_line() {
    // Turn 1 builds; the tool result of turn 2 costs more than its cap even
    // cut to nothing, its tool name being long: found before any line.
    let session = format!(
        r#"{{"chunks": [{{"id": "u1", "kind": "agent", "role": "user", "text": "go"}},
        {{"id": "a1", "kind": "agent", "role": "assistant", "text": "ok"}},
        {{"id": "c1", "kind": "workflow", "call_id": "k", "text": "ls"}},
        {{"id": "r1", "kind": "environment", "call_id": "k", "tool": "{}", "text": "{}"}},
        {{"id": "a2", "kind": "agent", "role": "assistant", "text": "done"}}]}}"#,
        "a_long_tool_name_".repeat(20),
        "file.txt ".repeat(300)
    );
    let out = run(&["replay", "-", "--cap", "tool_result=64"], &session);
    assert_failed(&out, 2, "chunks[3] (id \"r1\")");
    // Without the cap, both turns build.
    let fine = run(&["replay", "-"], &session);
    assert_eq!(fine.code, 0, "{}", fine.stderr);
    assert_eq!(fine.stdout.lines().count(), 3, "{}", fine.stdout);
}

#[test]
fn explain_survives_the_largest_budget() {
    let out = build_file(
        SMALL,
        &["--max-tokens", "18446744073709551615", "--explain"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("window by kind"), "{}", out.stderr);
}

#[test]
fn a_zero_budget_names_max_tokens() {
    let out = build_file(SMALL, &["--max-tokens", "0"]);
    assert_failed(&out, 2, "max_tokens must be at least 1");
    assert!(
        out.stderr
            .ends_with("\nhint: set the prompt budget with --max-tokens N\n"),
        "{}",
        out.stderr
    );
}

#[test]
fn output_to_a_closed_pipe_ends_quietly() {
    // The reading end of stdout is closed before the binary has its input,
    // so its first line meets a broken pipe; `build` writes once at the end,
    // `replay` a line per turn. Like a Unix tool killed by SIGPIPE, it
    // exits 141 and says nothing.
    for command in ["build", "replay"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agent-context"))
            .arg(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn agent-context");
        drop(child.stdout.take());
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(SMALL.as_bytes()).expect("write session");
        drop(stdin);
        let output = child.wait_with_output().expect("wait for agent-context");
        let stderr = String::from_utf8(output.stderr).expect("UTF-8");
        assert_eq!(output.status.code(), Some(141), "{command}: {stderr}");
        assert_eq!(stderr, "", "{command}");
    }
}
