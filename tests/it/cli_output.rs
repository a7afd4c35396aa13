//! What the binary prints and when: the `--explain` sample of docs/cli.md is the
//! main job's output, and `replay` writes each turn as it is built.

use std::process::Command;

use crate::common::cli::{Run, run};

const README: &str = include_str!("../../README.md");
/// The documents that hold samples and lists the tests check.
const DOCS: [&str; 3] = [
    README,
    include_str!("../../docs/cli.md"),
    include_str!("../../docs/native.md"),
];

/// The code block between `<!-- NAME:begin -->` and `<!-- NAME:end -->`,
/// in the README or a document of `docs/`.
fn sample(name: &str) -> &'static str {
    let begin = format!("<!-- {name}:begin -->\n");
    let end = format!("<!-- {name}:end -->");
    let doc = DOCS
        .into_iter()
        .find(|doc| doc.contains(&begin))
        .expect("begin marker");
    let start = doc.find(&begin).expect("begin marker") + begin.len();
    let block = &doc[start..start + doc[start..].find(&end).expect("end marker")];
    let body = block.split_once('\n').expect("opening fence").1;
    body.strip_suffix("```\n").expect("closing fence")
}

/// The arguments of the README's main job (`cargo run --release -- ARGS`).
fn main_job() -> Vec<&'static str> {
    let line = README
        .lines()
        .find(|line| line.starts_with("cargo run --release -- build "))
        .expect("the main job's command");
    line.split_whitespace().skip(4).collect()
}

#[test]
fn the_explain_sample_is_what_the_main_job_prints() {
    let args = main_job();
    assert!(args.contains(&"--explain"), "{args:?}");
    let out = Command::new(env!("CARGO_BIN_EXE_agent-context"))
        .args(&args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run agent-context");
    assert!(out.status.success(), "{out:?}");
    let printed = String::from_utf8(out.stderr).expect("UTF-8");
    assert!(
        printed == sample("explain-sample"),
        "docs/cli.md's --explain sample differs from what `{}` prints; replace it by:\n{printed}",
        args.join(" ")
    );
}

#[test]
fn the_readme_quickstart_is_the_example() {
    // `cargo test` builds the example; `.ci/run` runs it.
    let example = include_str!("../../examples/quickstart.rs");
    let code = example
        .split_once("\n\n")
        .expect("a header, then the code")
        .1;
    assert!(
        sample("quickstart") == code,
        "README.md's Rust quickstart differs from examples/quickstart.rs; replace it by:\n{code}"
    );
}

#[test]
fn replay_writes_each_turn_as_it_is_built() {
    // Without timing: a turn that fails ends the run, and a replay that held
    // its lines back to the end (as `build` holds its output) would print
    // nothing. Turn 2 fails because its latest user message, protected, does
    // not fit the budget; the whole session fits (that message is no longer
    // the latest), so the check of the whole session before the first turn
    // lets the replay run.
    let chunk = |id: &str, role: &str, text: &str| serde_json::json!({"id": id, "kind": "agent", "role": role, "text": text});
    let session = serde_json::json!({"chunks": [
        chunk("u1", "user", "List the files."),
        chunk("a1", "assistant", "Two files."),
        chunk("u2", "user", &"Read this log line. ".repeat(300)),
        chunk("a2", "assistant", "Done."),
        chunk("u3", "user", "Thanks."),
        chunk("a3", "assistant", "You are welcome."),
    ]})
    .to_string();
    let Run {
        code,
        stdout,
        stderr,
    } = run(&["replay", "-", "--max-tokens", "300"], &session);
    assert_eq!(code, 1, "{stderr}");
    // The error names the turn it could not build.
    assert!(
        stderr.starts_with(
            "error: turn 2 (chunks 1 to 4, up to \"a2\"): budget exceeded: protected content needs"
        ),
        "{stderr}"
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "turn 1 only: {stdout}");
    assert!(
        lines[0].starts_with("{\"turn\":1,\"chunks\":2,"),
        "{stdout}"
    );
}

/// Each native sample of docs/native.md is a run of consecutive messages (or
/// input items) of the request the main job's session gives.
#[test]
fn readme_native_samples_are_excerpts_of_the_output() {
    for (output, list) in [
        ("openai-native", "messages"),
        ("openai-responses", "input"),
        ("anthropic-native", "messages"),
    ] {
        let sample: serde_json::Value =
            serde_json::from_str(sample(&format!("native-sample:{output}"))).expect("sample JSON");
        let sample = sample.as_array().expect("the sample is an array");
        let args = [
            "build",
            concat!(env!("CARGO_MANIFEST_DIR"), "/data/coding-agent.json"),
            "--max-tokens",
            "4000",
            "--reserve",
            "500",
            "--output",
            output,
        ];
        let Run { code, stdout, .. } = run(&args, "");
        assert_eq!(code, 0, "{output}");
        let body: serde_json::Value = serde_json::from_str(&stdout).expect("a JSON body");
        let items = body[list].as_array().expect("the request's list");
        assert!(
            !sample.is_empty() && items.windows(sample.len()).any(|w| w == sample.as_slice()),
            "docs/native.md's {output} sample is not in its output"
        );
    }
}

#[test]
fn the_bundled_agent_fits_small_windows() {
    // Its latest user message is followed by three tool steps: they are
    // history, not protected, so 4,000 and 6,000 tokens are enough.
    for max in ["4000", "6000"] {
        let out = Command::new(env!("CARGO_BIN_EXE_agent-context"))
            .args(["build", "data/coding-agent.json", "--max-tokens", max])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("run agent-context");
        assert!(out.status.success(), "{max}: {out:?}");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert!(report["token_count"].as_u64().unwrap() <= max.parse().unwrap());
    }
}

#[test]
fn an_anthropic_request_reserves_a_default_reply_as_typed() {
    let request = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_agent-context"))
            .args([
                "build",
                "data/coding-agent.json",
                "--output",
                "anthropic-native",
            ])
            .args(["--model", "claude-sonnet-4-5"])
            .args(extra)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("run agent-context")
    };
    for (extra, max_tokens) in [
        (&[][..], 4096),
        (&["--max-tokens", "8000"][..], 2000),
        (&["--reserve", "1000"][..], 1000),
    ] {
        let out = request(extra);
        assert!(out.status.success(), "{extra:?}: {out:?}");
        let body: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(body["max_tokens"], max_tokens, "{extra:?}");
    }
    let refused = request(&["--reserve", "0"]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("leave it out for the default of 4096"),
        "{stderr}"
    );
}

/// The README's paragraph that lists the chunk fields names exactly the
/// fields the parser accepts (those its error for an unknown one lists).
#[test]
fn the_readme_lists_every_chunk_field() {
    let session =
        r#"{"chunks": [{"id": "u1", "kind": "agent", "role": "user", "text": "hi", "colour": 1}]}"#;
    let Run { code, stderr, .. } = run(&["build"], session);
    assert_eq!(code, 2, "{stderr}");
    let accepted: Vec<&str> = stderr
        .split("expected one of: ")
        .nth(1)
        .expect("the error lists the fields")
        .trim_end()
        .split(", ")
        .collect();
    let start = README.find("Chunk fields: ").expect("the chunk field list");
    let paragraph = &README[start..start + README[start..].find("\n\n").expect("its end")];
    // The fields are the backticked names outside parentheses.
    let (mut listed, mut depth, mut name) = (Vec::new(), 0, None::<String>);
    for c in paragraph[..paragraph.find("Any other field").expect("the rule")].chars() {
        match (c, name.as_mut()) {
            ('(', _) => depth += 1,
            (')', _) => depth -= 1,
            ('`', None) if depth == 0 => name = Some(String::new()),
            ('`', Some(_)) => listed.extend(name.take()),
            (c, Some(name)) => name.push(c),
            _ => {}
        }
    }
    let mut sorted_listed = listed.clone();
    sorted_listed.sort_unstable();
    let mut sorted_accepted: Vec<String> = accepted.iter().map(|f| (*f).to_owned()).collect();
    sorted_accepted.sort_unstable();
    assert_eq!(sorted_listed, sorted_accepted, "README.md lists {listed:?}");
}

/// The command-line synopsis of docs/cli.md has a line for every command.
#[test]
fn the_readme_synopsis_names_every_command() {
    let help = run(&["--help"], "").stdout;
    let commands = help
        .split("Commands:\n")
        .nth(1)
        .expect("the command list")
        .lines()
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|&command| command != "help");
    let cli = include_str!("../../docs/cli.md");
    let start = cli.find("# Command line\n\n```\n").expect("the synopsis");
    let synopsis = &cli[start..start + cli[start..].find("```\n\n").expect("its end")];
    let mut seen = 0;
    for command in commands {
        seen += 1;
        assert!(
            synopsis.contains(&format!("\nagent-context {command} ")),
            "docs/cli.md's synopsis leaves out `{command}`"
        );
    }
    assert!(seen >= 6, "{help}");
}
