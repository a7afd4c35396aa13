//! The `agent-context` binary: every error path (message, exit code, empty
//! stdout) and the success paths of `build` and `count`.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

/// A finished run of the binary.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run_bytes(args: &[&str], stdin: &[u8]) -> Run {
    // Run from the temp dir so relative paths in the tests resolve there.
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-context"))
        .args(args)
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agent-context");
    let mut pipe = child.stdin.take().unwrap();
    // The binary may exit before reading (usage errors): ignore a broken pipe.
    let _ = pipe.write_all(stdin);
    drop(pipe);
    let output = child.wait_with_output().expect("wait for agent-context");
    Run {
        code: output.status.code().expect("exited normally"),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

fn run(args: &[&str], stdin: &str) -> Run {
    run_bytes(args, stdin.as_bytes())
}

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
    root_not_object,
    "[]",
    "invalid session: field `(root)`: expected an object, found an array"
);

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
        "[possible values: report, openai, anthropic, text]",
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
fn nonexistent_input_file() {
    let out = run(&["build", "agent-context-no-such-file.json"], "");
    assert_failed(&out, 2, "reading agent-context-no-such-file.json: ");
    insta::assert_snapshot!("nonexistent_file", out.stderr);
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
fn render_errors() {
    let not_fragments = run(&["render", "--format", "xml"], r#"{"config": 1}"#);
    assert_failed(&not_fragments, 2, "pass --data");
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
    let bad_low_water = build_file(&long, &["--low-water", "1.5"]);
    assert_failed(&bad_low_water, 2, "low_water");
}

// ---- replay --------------------------------------------------------------

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
    assert_failed(&out, 2, "max_tokens (--max-tokens) must be at least 1");
}
