//! `agent-context chat compact` on every backend: a plan, its apply, the
//! build that shows it, `--compact-at`, and bad input (exit 2, what and
//! where, nothing written).

use crate::common::cli::{Run, run};
use crate::common::temp::TempDir;
use serde_json::{Value, json};

/// A fresh store of every backend, each with what holds it.
fn fresh_dbs(name: &str) -> Vec<(Box<dyn std::any::Any>, String)> {
    let dir = TempDir::new(&format!("compact-{name}"));
    let db = dir.join("chats.db").display().to_string();
    #[cfg_attr(not(feature = "postgres"), allow(unused_mut))]
    let mut dbs: Vec<(Box<dyn std::any::Any>, String)> = vec![(Box::new(dir), db)];
    #[cfg(feature = "postgres")]
    {
        let schema = crate::common::postgres::Schema::new(&format!("compact_{name}"));
        let url = schema.url().to_owned();
        dbs.push((Box::new(schema), url));
    }
    dbs
}

/// A tool loop of `steps` steps after one instruction, as session JSON.
fn tool_loop(steps: usize) -> String {
    let mut chunks =
        vec![json!({"id": "u0", "kind": "agent", "role": "user", "text": "Make the tests pass."})];
    for s in 0..steps {
        let body: String = (0..20)
            .map(|i| format!("fn f{s}_{i}() -> u32 {{ {i} }}\n"))
            .collect();
        chunks.push(json!({"id": format!("a{s}"), "kind": "agent", "role": "assistant", "text": format!("Step {s}.")}));
        chunks.push(json!({"id": format!("c{s}"), "kind": "workflow", "tool": "read", "call_id": format!("k{s}"), "data": {"path": format!("src/f{s}.rs")}}));
        chunks.push(json!({"id": format!("r{s}"), "kind": "environment", "tool": "read", "call_id": format!("k{s}"), "text": body}));
    }
    json!({"system_prompt": "You are an agent.", "chunks": chunks}).to_string()
}

fn ok(run: &Run) -> Value {
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    serde_json::from_str(&run.stdout).expect("JSON on stdout")
}

/// The chunks the chat exports.
fn exported(db: &str) -> usize {
    let export = ok(&run(&["chat", "export", "--db", db, "--chat", "c"], ""));
    export["chunks"].as_array().map_or(0, Vec::len)
}

const FLAGS: [&str; 4] = ["--max-tokens", "16000", "--reserve", "500"];

fn compact(db: &str, extra: &[&str], stdin: &str) -> Run {
    let mut args = vec!["chat", "compact", "--db", db, "--chat", "c"];
    args.extend(FLAGS);
    args.extend(extra);
    run(&args, stdin)
}

#[test]
fn a_plan_applied_from_the_shell_shows_in_the_next_build() {
    for (_held, db) in fresh_dbs("plan") {
        ok(&run(
            &["chat", "append", "--db", &db, "--chat", "c"],
            &tool_loop(60),
        ));
        let mut args = vec![
            "chat",
            "build",
            "--db",
            &db,
            "--chat",
            "c",
            "--compact-at",
            "0.5",
        ];
        args.extend(FLAGS);
        let before = ok(&run(&args, ""));
        assert_eq!(before["compaction_due"], true, "{db}");
        let plan = ok(&compact(&db, &["--plan", "--keep-tokens", "2000"], ""));
        let token = plan["plan"].as_str().expect("a plan");
        assert!(plan["request_tokens"].as_u64().unwrap() > 0);
        let applied = ok(&compact(
            &db,
            &["--apply", token, "--summary", "-"],
            "Read f0 to f40.",
        ));
        assert_eq!(applied["covers"], plan["covers"]);
        assert_eq!(applied["tokens_before"], plan["folded"]["tokens"]);
        let after = ok(&run(&args, ""));
        assert_eq!(after["compaction"]["id"], applied["compaction"], "{db}");
        assert_eq!(after["compaction_due"], false);
        assert!(after["token_count"].as_u64() < before["token_count"].as_u64());
        // The same plan again: exit 2, nothing written.
        let chunks = exported(&db);
        let again = compact(&db, &["--apply", token, "--summary", "-"], "Again.");
        assert_eq!(again.code, 2, "{}", again.stderr);
        assert!(
            again.stderr.contains("another compaction"),
            "{}",
            again.stderr
        );
        assert!(again.stdout.is_empty());
        assert_eq!(exported(&db), chunks);
    }
}

#[test]
fn bad_compaction_input_exits_2_saying_what_and_writes_nothing() {
    let dbs = fresh_dbs("bad");
    let db = &dbs[0].1;
    ok(&run(
        &["chat", "append", "--db", db, "--chat", "c"],
        &tool_loop(40),
    ));
    let plan = ok(&compact(db, &["--plan", "--keep-tokens", "2000"], ""));
    let token = plan["plan"].as_str().expect("a plan").to_owned();
    let forged = token.replacen("acp1.", "acp1.00", 1);
    let huge = "word ".repeat(40_000);
    let cases: [(Vec<&str>, &str, &str); 7] = [
        (
            vec!["--plan", "--keep-tokens", "99999"],
            "",
            "over the budget",
        ),
        (
            vec![
                "--plan",
                "--summarizer-max-tokens",
                "1000",
                "--summary-tokens",
                "2000",
            ],
            "",
            "must hold more than the summary",
        ),
        (
            vec!["--apply", &forged, "--summary", "-"],
            "ok",
            "plan again",
        ),
        (vec!["--apply", &token, "--summary", "-"], "   ", "empty"),
        (
            vec!["--apply", &token, "--summary", "-"],
            &huge,
            "not smaller",
        ),
        (
            vec!["--plan", "--apply", &token, "--summary", "-"],
            "ok",
            "cannot be used with",
        ),
        (vec!["--apply", &token], "ok", "--summary"),
    ];
    for (extra, stdin, expected) in cases {
        let before = exported(db);
        let failed = compact(db, &extra, stdin);
        assert_eq!(failed.code, 2, "{extra:?}: {}", failed.stderr);
        assert!(
            failed.stderr.contains(expected),
            "{extra:?}: {}",
            failed.stderr
        );
        assert!(failed.stdout.is_empty(), "{extra:?}");
        assert_eq!(exported(db), before, "{extra:?} wrote");
    }
    // Applied under other settings: refused.
    let mut args = vec![
        "chat",
        "compact",
        "--db",
        db,
        "--chat",
        "c",
        "--max-tokens",
        "9000",
    ];
    args.extend(["--reserve", "500", "--apply", &token, "--summary", "-"]);
    let other = run(&args, "ok");
    assert_eq!(other.code, 2, "{}", other.stderr);
    assert!(other.stderr.contains("other settings"), "{}", other.stderr);
    // A native item of the wrong type names its field.
    let dir = TempDir::new("compact-native");
    let native = dir.join("native.json");
    std::fs::write(&native, r#"{"anthropic": {"type": "text", "text": "x"}}"#).unwrap();
    let native = native.display().to_string();
    let failed = compact(
        db,
        &["--apply", &token, "--summary", "-", "--native", &native],
        "ok",
    );
    assert_eq!(failed.code, 2, "{}", failed.stderr);
    assert!(
        failed.stderr.contains("native.anthropic.type"),
        "{}",
        failed.stderr
    );
}

#[test]
fn nothing_to_fold_prints_a_null_plan_and_exits_0() {
    let dbs = fresh_dbs("nothing");
    let db = &dbs[0].1;
    ok(&run(
        &["chat", "append", "--db", db, "--chat", "c"],
        &tool_loop(2),
    ));
    let plan = ok(&compact(db, &["--plan"], ""));
    assert_eq!(plan["plan"], Value::Null);
    assert!(plan["reason"].as_str().unwrap().contains("nothing to fold"));
}

#[test]
fn replay_with_a_trigger_and_the_stand_in_compacts_a_whole_run() {
    let session = tool_loop(150);
    let args = [
        "replay",
        "-",
        "--max-tokens",
        "8000",
        "--reserve",
        "500",
        "--compact-at",
        "0.8",
        "--summarizer",
        "first-lines",
    ];
    let replayed = run(&args, &session);
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    let lines: Vec<Value> = replayed
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (turns, summary) = lines.split_at(lines.len() - 1);
    let compacted: Vec<&Value> = turns
        .iter()
        .filter(|t| t["compacted"].is_object())
        .collect();
    assert!(compacted.len() >= 3, "{}", summary[0]);
    assert_eq!(summary[0]["summary"]["compactions"], compacted.len());
    for turn in turns {
        assert!(turn["token_count"].as_u64().unwrap() <= 7_500, "{turn}");
        assert!(turn["compaction_due"].is_boolean());
    }
    for turn in compacted {
        let applied = &turn["compacted"];
        assert!(applied["tokens_after"].as_u64() < applied["tokens_before"].as_u64());
        assert_eq!(turn["compaction_due"], true);
    }
    // `--keep-tokens` is the stand-in's: alone it is refused.
    let bare = run(&["replay", "-", "--keep-tokens", "1000"], &session);
    assert_eq!(bare.code, 2, "{}", bare.stderr);
    assert!(bare.stderr.contains("--summarizer"), "{}", bare.stderr);
}

#[test]
fn a_compaction_appended_by_hand_covers_a_stored_chunk() {
    for (_held, db) in fresh_dbs("append") {
        ok(&run(
            &["chat", "append", "--db", &db, "--chat", "c"],
            &tool_loop(20),
        ));
        let chunk =
            r#"{"id": "x1", "kind": "compaction", "covers": "r9", "text": "Read f0 to f9."}"#;
        ok(&run(&["chat", "append", "--db", &db, "--chat", "c"], chunk));
        let mut args = vec!["chat", "build", "--db", &db, "--chat", "c"];
        args.extend(FLAGS);
        let built = ok(&run(&args, ""));
        assert_eq!(built["compaction"]["id"], "x1", "{db}");
        // 10 steps of 3 chunks, and no figures stated: counted by the build.
        assert_eq!(built["compaction"]["chunks"], 30);
        for (bad, why) in [
            (
                r#"{"id": "x2", "kind": "compaction", "covers": "nope", "text": "s"}"#,
                "not a chunk before",
            ),
            (
                r#"{"id": "x3", "kind": "compaction", "covers": "r3", "text": "s"}"#,
                "already folds",
            ),
        ] {
            let before = exported(&db);
            let refused = run(&["chat", "append", "--db", &db, "--chat", "c"], bad);
            assert_eq!(refused.code, 2, "{}", refused.stderr);
            assert!(refused.stderr.contains(why), "{}", refused.stderr);
            assert_eq!(exported(&db), before);
        }
    }
}
