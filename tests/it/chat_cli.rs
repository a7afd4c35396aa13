//! `agent-context chat …`: the walk-through of docs/stores.md on the bundled data,
//! and `chat build` against `build` of `chat export`, byte for byte.

use std::path::Path;

use crate::common;
use crate::common::cli::{Run, run};
use crate::common::temp::TempDir;
use serde_json::{Value, json};

const DATA: [&str; 2] = ["data/coding-agent.json", "data/research-agent.json"];

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(name)
        .display()
        .to_string()
}

/// A store path in a fresh directory of its own.
fn fresh_db(name: &str) -> (TempDir, String) {
    let dir = TempDir::new(&format!("chat-{name}"));
    let db = dir.join("agent-context.db").display().to_string();
    (dir, db)
}

/// A fresh store of every backend: a SQLite path and, with the `postgres`
/// feature, a URL naming a schema of its own on the test server. Each
/// comes with what holds it until the test ends.
fn fresh_dbs(name: &str) -> Vec<(Box<dyn std::any::Any>, String)> {
    let (dir, db) = fresh_db(name);
    #[cfg_attr(not(feature = "postgres"), allow(unused_mut))]
    let mut dbs: Vec<(Box<dyn std::any::Any>, String)> = vec![(Box::new(dir), db)];
    #[cfg(feature = "postgres")]
    {
        let schema = common::postgres::Schema::new(name);
        let url = schema.url().to_owned();
        dbs.push((Box::new(schema), url));
    }
    dbs
}

fn ok(run: Run) -> Value {
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap_or(Value::String(run.stdout))
}

#[test]
fn chat_build_is_build_of_chat_export_byte_for_byte() {
    let dbs = fresh_dbs("build");
    for (n, file) in DATA.iter().enumerate() {
        let chat = format!("chat-{n}");
        let exports: Vec<String> = dbs
            .iter()
            .map(|(_held, db)| appended_and_exported(db, &chat, file))
            .collect();
        // Every backend exports the chat byte for byte alike, so one cold
        // build of the export stands for all of them.
        for (export, (_held, db)) in exports.iter().zip(&dbs) {
            assert_eq!(export, &exports[0], "{db}'s export of {file}");
        }
        for output in common::OUTPUTS {
            for budget in [
                ["--max-tokens", "4000", "--reserve", "500"],
                ["--max-tokens", "200000", "--reserve", "0"],
            ] {
                let mut flags = vec!["--output", output];
                flags.extend(budget);
                let mut build_args = vec!["build", "-"];
                build_args.extend(&flags);
                let cold = run(&build_args, &exports[0]);
                // Anthropic's max_tokens is the reserve, which must be positive.
                let refused = output == "anthropic-native" && budget[3] == "0";
                assert_eq!(cold.code, if refused { 2 } else { 0 }, "{}", cold.stderr);
                for (_held, db) in &dbs {
                    let mut chat_args = vec!["chat", "build", "--db", db, "--chat", &chat];
                    chat_args.extend(&flags);
                    let stored = run(&chat_args, "");
                    assert_eq!(stored.code, cold.code, "{}", stored.stderr);
                    assert_eq!(
                        without_previous_build(&stored.stdout, output),
                        cold.stdout,
                        "{db} {file} {flags:?}"
                    );
                    assert_eq!(stored.stderr, cold.stderr, "{db} {file} {flags:?}");
                }
            }
        }
        // The export is the input, as the session format writes it.
        let input: Value =
            serde_json::from_str(&std::fs::read_to_string(data(file)).unwrap()).unwrap();
        let exported: Value = serde_json::from_str(&exports[0]).unwrap();
        assert_eq!(exported["chunks"], input["chunks"]);
    }
}

/// Appends `file` to a new chat of `db`; its `chat export`.
fn appended_and_exported(db: &str, chat: &str, file: &str) -> String {
    let appended = ok(run(
        &["chat", "append", "--db", db, "--chat", chat, &data(file)],
        "",
    ));
    assert_eq!(appended["branch"], "main");
    let export = run(&["chat", "export", "--db", db, "--chat", chat], "");
    assert_eq!(export.code, 0, "{}", export.stderr);
    export.stdout
}

#[test]
fn the_readme_walk_through_runs() {
    for (_held, db) in fresh_dbs("walk") {
        the_readme_walk_through_runs_in(&db);
    }
}

fn the_readme_walk_through_runs_in(db: &str) {
    let chat = |args: &[&str], stdin: &str| {
        let mut all = vec!["chat", args[0], "--db", db, "--chat", "demo"];
        all.extend(&args[1..]);
        run(&all, stdin)
    };
    ok(chat(&["append", &data(DATA[0])], ""));
    let text = chat(
        &[
            "build",
            "--max-tokens",
            "4000",
            "--reserve",
            "500",
            "--output",
            "text",
        ],
        "",
    );
    assert_eq!(text.code, 0);
    assert!(
        text.stdout.contains("<elided_history"),
        "the budget cuts the chat"
    );
    ok(chat(&["checkpoint", "before-retry"], ""));
    let rewound = ok(chat(&["rewind", "--to", "c10"], ""));
    assert_eq!(rewound["branch"], "main-v2");
    let turn = r#"{"id": "u9", "kind": "agent", "role": "user", "text": "Try another fix."}"#;
    let appended = ok(chat(&["append"], turn));
    assert_eq!(appended["appended"], 1);
    let branches = ok(chat(&["branches"], ""));
    let names: Vec<_> = branches["branches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["name"].clone(), b["chunks"].clone(), b["active"].clone()))
        .collect();
    assert_eq!(
        names,
        [
            (Value::from("main"), Value::from(40), Value::from(false)),
            (Value::from("main-v2"), Value::from(10), Value::from(true))
        ]
    );
    let restored = ok(chat(&["restore", "before-retry"], ""));
    assert_eq!(restored["branch"], "main-v3");
    let export = ok(chat(&["export"], ""));
    assert_eq!(export["chunks"].as_array().unwrap().len(), 40);
    let listed = ok(run(&["chat", "list", "--db", db], ""));
    assert_eq!(listed["chats"][0]["active_branch"], "main-v3");
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let (dir, db) = fresh_db("bad");
    // Invalid JSON: not even the store file is created.
    let bad = run(
        &["chat", "append", "--db", &db, "--chat", "c"],
        "{\"chunks\": [",
    );
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(!Path::new(&db).exists());
    // A bad line of JSON Lines is named.
    let lines = "{\"id\": \"u1\", \"kind\": \"agent\", \"role\": \"user\", \"text\": \"a\"}\n{\"id\": \"u2\",\n";
    let bad = run(&["chat", "append", "--db", &db, "--chat", "c"], lines);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("line 2"), "{}", bad.stderr);
    // JSON Lines append; a duplicate id is refused with nothing written.
    ok(run(
        &["chat", "append", "--db", &db, "--chat", "c"],
        &lines.replace(
            ",\n",
            ", \"kind\": \"agent\", \"role\": \"assistant\", \"text\": \"b\"}\n",
        ),
    ));
    let dup = run(
        &["chat", "append", "--db", &db, "--chat", "c"],
        "{\"id\": \"u1\", \"kind\": \"thinking\", \"text\": \"again\"}",
    );
    assert_eq!(dup.code, 2);
    // The chunk is named by its place in the input, not after the branch's.
    assert!(
        dup.stderr.contains(
            "chunks[0] (id \"u1\"): field `id`: duplicate id: a chunk with this id is already \
             on branch \"main\""
        ),
        "{}",
        dup.stderr
    );
    let export = ok(run(&["chat", "export", "--db", &db, "--chat", "c"], ""));
    assert_eq!(export["chunks"].as_array().unwrap().len(), 2);
    // Reading verbs create nothing.
    let missing = run(&["chat", "export", "--db", &db, "--chat", "nope"], "");
    assert_eq!(missing.code, 2);
    assert!(missing.stderr.contains("no such chat"));
    let no_store = dir.join("none.db").display().to_string();
    let listed = run(&["chat", "list", "--db", &no_store], "");
    assert_eq!(listed.code, 2);
    assert!(!Path::new(&no_store).exists());
    // The library's error names no flag; the CLI's hint does.
    let (error, hint) = listed.stderr.split_once("\nhint: ").unwrap();
    assert!(!error.contains("--"), "{error}");
    assert_eq!(
        hint,
        "`chat append` creates one; other verbs need --db naming an existing store\n"
    );
    // A file that is no store is input to fix: exit 2, the file untouched.
    let garbage = dir.join("notes.txt");
    let text = "not a database, only notes long enough to fill a page ".repeat(20);
    std::fs::write(&garbage, &text).unwrap();
    let garbage = garbage.display().to_string();
    for args in [
        &["chat", "list", "--db", &garbage][..],
        &["chat", "append", "--db", &garbage, "--chat", "c"][..],
    ] {
        let refused = run(
            args,
            "{\"id\": \"u9\", \"kind\": \"agent\", \"role\": \"user\", \"text\": \"a\"}",
        );
        assert_eq!(refused.code, 2, "{}", refused.stderr);
        assert!(
            refused.stderr.contains("not a SQLite database"),
            "{}",
            refused.stderr
        );
    }
    assert_eq!(std::fs::read_to_string(&garbage).unwrap(), text);
    // Replacing needs exactly one assistant chunk.
    let two = "{\"id\": \"x\", \"kind\": \"agent\", \"role\": \"assistant\", \"text\": \"a\"}\n{\"id\": \"y\", \"kind\": \"agent\", \"role\": \"assistant\", \"text\": \"b\"}";
    let replace = |input: &str| {
        let args = [
            "chat",
            "append",
            "--db",
            &db,
            "--chat",
            "c",
            "--replace-last-assistant",
        ];
        run(&args, input)
    };
    assert_eq!(replace(two).code, 2);
    let replaced = ok(replace(&two[..two.find('\n').unwrap()]));
    assert_eq!(replaced["replaced"], true);
    let export = ok(run(&["chat", "export", "--db", &db, "--chat", "c"], ""));
    assert_eq!(export["chunks"][1]["id"], "x");
}

#[test]
fn an_object_with_no_session_field_is_a_chunk_missing_its_kind() {
    let (_dir, db) = fresh_db("no-kind");
    let append = |input: &str| run(&["chat", "append", "--db", &db, "--chat", "c"], input);
    for (input, needle) in [
        (r#"{"id": "x"}"#, "field `kind`: missing"),
        ("{}", "field `id`: missing"),
        (r#"{"id": "x", "text": "hi"}"#, "field `kind`: missing"),
    ] {
        let refused = append(input);
        assert_eq!(refused.code, 2, "{input}: {}", refused.stderr);
        assert!(
            refused.stderr.contains(needle),
            "{input}: {}",
            refused.stderr
        );
        assert_eq!(refused.stdout, "");
    }
    assert!(!Path::new(&db).exists());
    // A session's own field still makes a session, appending its lane.
    let lane = ok(append(r#"{"id": "s", "system_prompt": "Be brief."}"#));
    assert_eq!(lane["appended"], 0);
    let export = ok(run(&["chat", "export", "--db", &db, "--chat", "c"], ""));
    assert_eq!(export["system_prompt"], "Be brief.");
}

#[test]
fn append_under_a_model_of_unknown_window_needs_no_budget() {
    let (_dir, db) = fresh_db("unknown-model");
    let chunk = r#"{"id": "u1", "kind": "agent", "role": "user", "text": "Hello there."}"#;
    let model = ["--model", "no-such-model-xyz"];
    let args = [&["chat", "append", "--db", &db, "--chat", "c"][..], &model].concat();
    assert_eq!(ok(run(&args, chunk))["appended"], 1);
    // Its chunks build as `build` builds the export, budget given.
    let flags = [&model[..], &["--max-tokens", "1000", "--output", "text"]].concat();
    let export = ok(run(&["chat", "export", "--db", &db, "--chat", "c"], ""));
    let cold = run(&[&["build", "-"][..], &flags].concat(), &export.to_string());
    let built = run(
        &[&["chat", "build", "--db", &db, "--chat", "c"][..], &flags].concat(),
        "",
    );
    assert_eq!(
        (built.code, &built.stdout),
        (0, &cold.stdout),
        "{}",
        built.stderr
    );
}

#[test]
fn export_to_a_closed_pipe_ends_quietly() {
    use std::process::{Command, Stdio};
    let (_dir, db) = fresh_db("pipe");
    appended_and_exported(&db, "c", DATA[0]);
    // The reading end is closed before the export starts: its first
    // write meets a broken pipe, and it ends as `build` does.
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-context"))
        .args(["chat", "export", "--db", &db, "--chat", "c"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agent-context");
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("wait for agent-context");
    let stderr = String::from_utf8(output.stderr).expect("UTF-8");
    assert_eq!((output.status.code(), stderr.as_str()), (Some(141), ""));
}

#[test]
fn empty_input_is_refused_as_build_refuses_it() {
    let (_dir, db) = fresh_db("empty");
    let build = run(&["build"], "");
    for input in ["", " \n\n"] {
        let append = run(&["chat", "append", "--db", &db, "--chat", "c"], input);
        assert_eq!((append.code, &append.stderr), (2, &build.stderr));
    }
    assert!(
        build.stderr.contains("the input is empty"),
        "{}",
        build.stderr
    );
    assert!(!Path::new(&db).exists());
}

#[test]
fn only_append_says_it_creates_the_store() {
    let says_created = |verb: &str| {
        let help = run(&["chat", verb, "--help"], "");
        assert_eq!(help.code, 0, "{}", help.stderr);
        let db = help
            .stdout
            .split("--db <PATH|URL>")
            .nth(1)
            .unwrap_or_default();
        let db = &db[..db.find("[default").unwrap_or(db.len())];
        (db.contains("created if missing"), db.contains("must exist"))
    };
    assert_eq!(says_created("append"), (true, false));
    for verb in ["build", "export", "list", "branches", "fork", "checkpoint"] {
        assert_eq!(says_created(verb), (false, true), "{verb}");
    }
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

const TURN: &str = "{\"id\": \"u1\", \"kind\": \"agent\", \"role\": \"user\", \"text\": \"a\"}";

/// Every verb on `--db DB`, reading ones included, as (verb, arguments).
fn every_verb(db: &str) -> Vec<Vec<&str>> {
    let chat = ["--db", db, "--chat", "c"];
    let mut verbs: Vec<Vec<&str>> = [
        &["append"][..],
        &["build"],
        &["export"],
        &["rewind", "--to", "u1"],
        &["fork", "--name", "side"],
        &["switch", "main"],
        &["checkpoint", "here"],
        &["restore", "here"],
        &["branches"],
    ]
    .iter()
    .map(|verb| [&["chat", verb[0]][..], &chat, &verb[1..]].concat())
    .collect();
    verbs.push(vec!["chat", "list", "--db", db]);
    verbs
}

/// A `--db` that is empty or names what exists and is no regular file is
/// refused by every verb with exit 2, and nothing is created beside it.
#[test]
fn a_db_that_is_no_regular_file_is_refused_and_nothing_is_created() {
    let dir = TempDir::new("chat-db-kinds");
    let folder = dir.join("folder");
    std::fs::create_dir(&folder).unwrap();
    let folder = folder.display().to_string();
    #[cfg_attr(not(unix), allow(unused_mut))]
    let missing = dir.join("missing").join("agent-context.db");
    let under_file = dir.join("notes.txt");
    std::fs::write(&under_file, "notes").unwrap();
    let under_file = under_file.join("agent-context.db");
    let mut cases = vec![
        (
            folder.clone(),
            "it is a directory, not a SQLite file".to_owned(),
        ),
        (String::new(), "the path is empty".to_owned()),
        (
            missing.display().to_string(),
            format!("{} does not exist", dir.join("missing").display()),
        ),
        (
            under_file.display().to_string(),
            format!("{} is not a directory", dir.join("notes.txt").display()),
        ),
    ];
    #[cfg(unix)]
    {
        let fifo = dir.join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        cases.push((
            fifo.display().to_string(),
            "it is not a regular file (a FIFO)".to_owned(),
        ));
    }
    let before = listing(dir.path());
    for (db, says) in &cases {
        for args in every_verb(db) {
            let refused = run(&args, TURN);
            assert_eq!(refused.code, 2, "{args:?}: {}", refused.stderr);
            assert_eq!(refused.stdout, "", "{args:?}");
            assert!(
                refused.stderr.contains(says.as_str()),
                "{args:?}: {}",
                refused.stderr
            );
        }
    }
    assert_eq!(listing(dir.path()), before);
    assert_eq!(listing(Path::new(&folder)), Vec::<String>::new());
}

#[cfg(unix)]
#[test]
fn dev_null_is_refused_as_a_store() {
    let journal = Path::new("/dev/null-journal");
    let there_before = journal.exists();
    for args in every_verb("/dev/null") {
        let refused = run(&args, TURN);
        assert_eq!(refused.code, 2, "{args:?}: {}", refused.stderr);
        assert!(
            refused
                .stderr
                .contains("store /dev/null: it is not a regular file (a character device)"),
            "{args:?}: {}",
            refused.stderr
        );
    }
    assert!(there_before || !journal.exists());
}

#[test]
fn an_empty_chat_id_is_refused_and_nothing_is_created() {
    let (dir, db) = fresh_db("empty-chat");
    let verbs = every_verb(&db);
    // `chat list` names no chat.
    for mut args in verbs.into_iter().filter(|args| args[1] != "list") {
        let at = args.iter().position(|&arg| arg == "c").unwrap();
        args[at] = "";
        let refused = run(&args, TURN);
        assert_eq!(refused.code, 2, "{args:?}: {}", refused.stderr);
        assert_eq!(refused.stdout, "", "{args:?}");
        assert!(
            refused.stderr.contains("a chat id cannot be empty"),
            "{args:?}: {}",
            refused.stderr
        );
    }
    assert_eq!(listing(dir.path()), Vec::<String>::new());
}

#[test]
fn an_existing_checkpoint_is_moved_only_with_force() {
    let (_dir, db) = fresh_db("checkpoint");
    let chat = |args: &[&str], stdin: &str| {
        let mut all = vec!["chat", args[0], "--db", &db, "--chat", "c"];
        all.extend(&args[1..]);
        run(&all, stdin)
    };
    let first = ok(chat(&["append"], TURN));
    let taken = ok(chat(&["checkpoint", "cp"], ""));
    assert_eq!(taken["node"], first["head"]);
    let second = ok(chat(&["append"], &TURN.replace("u1", "u2")));
    assert_ne!(second["head"], first["head"]);
    let refused = chat(&["checkpoint", "cp"], "");
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert_eq!(refused.stdout, "");
    assert!(
        refused.stderr.contains(&format!(
            "a checkpoint named \"cp\" exists (at node {}); pass --force to move it",
            first["head"]
        )),
        "{}",
        refused.stderr
    );
    let checkpoints = |db: &str| {
        ok(run(&["chat", "branches", "--db", db, "--chat", "c"], ""))["checkpoints"].clone()
    };
    assert_eq!(
        checkpoints(&db),
        json!([{"name": "cp", "node": first["head"]}])
    );
    let moved = ok(chat(&["checkpoint", "cp", "--force"], ""));
    assert_eq!(moved["node"], second["head"]);
    assert_eq!(
        checkpoints(&db),
        json!([{"name": "cp", "node": second["head"]}])
    );
    // A new name needs no --force.
    ok(chat(&["checkpoint", "other"], ""));
}

/// `chat switch` takes a branch: a checkpoint's name says how to start a
/// branch at it, and `--branch` is no option of it.
#[test]
fn switch_takes_a_branch_and_says_what_to_do_with_a_checkpoint() {
    let (_dir, db) = fresh_db("switch");
    let chat = |args: &[&str], stdin: &str| {
        let mut all = vec!["chat", args[0], "--db", &db, "--chat", "c"];
        all.extend(&args[1..]);
        run(&all, stdin)
    };
    ok(chat(&["append"], TURN));
    ok(chat(&["checkpoint", "cp"], ""));
    ok(chat(&["fork", "--name", "side"], ""));
    assert_eq!(ok(chat(&["switch", "side"], ""))["branch"], "side");
    let checkpoint = chat(&["switch", "cp"], "");
    assert_eq!(checkpoint.code, 2, "{}", checkpoint.stderr);
    assert!(
        checkpoint.stderr.contains(
            "\"cp\" is a checkpoint, not a branch; start a branch at it with `chat restore cp`"
        ),
        "{}",
        checkpoint.stderr
    );
    let branch_flag = chat(&["switch", "--branch", "main", "main"], "");
    assert_eq!(branch_flag.code, 2);
    assert!(
        branch_flag
            .stderr
            .contains("unexpected argument '--branch'")
    );
    let help = run(&["chat", "switch", "--help"], "");
    assert!(
        help.stdout.contains("<NAME>  The branch to make active"),
        "{}",
        help.stdout
    );
}

/// A PostgreSQL URL: reading verbs on a schema with no store create
/// nothing, bad parameters and unreachable servers exit with the reason,
/// and no message shows the password.
#[cfg(feature = "postgres")]
#[test]
fn postgres_urls_are_checked_and_their_passwords_kept_out_of_messages() {
    let schema = common::postgres::Schema::new("cli_url");
    let missing = run(&["chat", "list", "--db", schema.url()], "");
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(missing.stderr.contains("no store at"), "{}", missing.stderr);
    let schemas = schema
        .client()
        .query(
            "SELECT 1 FROM information_schema.schemata WHERE schema_name LIKE 't_cli_url%'",
            &[],
        )
        .unwrap();
    assert!(schemas.is_empty(), "a reading verb created the schema");
    let bad = run(
        &[
            "chat",
            "list",
            "--db",
            &format!("{}&pool_size=0", schema.url()),
        ],
        "",
    );
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("pool_size"), "{}", bad.stderr);
    // Port 1 on loopback: nothing listens there.
    let unreachable = "postgres://ops:hunter2@127.0.0.1:1/db?connect_timeout=2";
    let down = run(&["chat", "list", "--db", unreachable], "");
    assert_eq!(down.code, 1, "{}", down.stderr);
    assert!(down.stderr.contains("127.0.0.1:1"), "{}", down.stderr);
    assert!(!down.stderr.contains("hunter2"), "{}", down.stderr);
}

/// The system lane is replaced by an input that carries one, and cleared
/// with `--clear-system`.
#[test]
fn the_system_lane_is_replaced_or_cleared() {
    let (_dir, db) = fresh_db("system");
    let append = |args: &[&str], input: &str| {
        let base = ["chat", "append", "--db", &db, "--chat", "c"];
        ok(run(&[&base[..], args].concat(), input))
    };
    let lane = || {
        let export = ok(run(&["chat", "export", "--db", &db, "--chat", "c"], ""));
        (export["system_prompt"].clone(), export["fragments"].clone())
    };
    let session = r#"{"system_prompt": "Be brief.",
        "fragments": [{"name": "repo", "data": {"lang": "rust"}}],
        "chunks": [{"id": "u1", "kind": "agent", "role": "user", "text": "hi"}]}"#;
    append(&[], session);
    let (prompt, fragments) = lane();
    assert_eq!(prompt, "Be brief.");
    assert_eq!(fragments.as_array().map(Vec::len), Some(1));
    // Chunks alone leave the lane as it is.
    append(
        &[],
        r#"{"id": "a1", "kind": "agent", "role": "assistant", "text": "hello"}"#,
    );
    assert_eq!(lane().0, "Be brief.");
    // Cleared, then set anew in one save.
    append(&["--clear-system"], r#"{"chunks": []}"#);
    let (prompt, fragments) = lane();
    assert!(prompt.is_null(), "{prompt}");
    assert!(
        fragments.as_array().is_none_or(Vec::is_empty),
        "{fragments}"
    );
    append(
        &["--clear-system"],
        r#"{"system_prompt": "Be thorough.", "chunks": []}"#,
    );
    assert_eq!(lane().0, "Be thorough.");
}

/// A chat keeps the `context_management` of the session appended to it in
/// its system lane, in every store and from process to process: `chat
/// export` gives it back, `chat build` builds with it, an input replaces
/// it and `--clear-system` clears it.
#[test]
fn context_management_is_kept_with_the_chat() {
    for (_held, db) in fresh_dbs("management") {
        context_management_is_kept_with_the_chat_in(&db);
    }
}

fn context_management_is_kept_with_the_chat_in(db: &str) {
    let chat = |args: &[&str], stdin: &str| {
        let mut all = vec!["chat", args[0], "--db", db, "--chat", "m"];
        all.extend(&args[1..]);
        run(&all, stdin)
    };
    let management = json!({"edits": [
        {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}},
        {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 1},
         "keep": {"type": "tool_uses", "value": 1}, "exclude_tools": ["memory"],
         "clear_tool_inputs": true}
    ]});
    let session = json!({
        "system_prompt": "Be brief.",
        "context_management": management,
        "chunks": [
            {"id": "u1", "kind": "agent", "role": "user", "text": "List and read."},
            {"id": "c1", "kind": "workflow", "action": "tool_call", "tool": "ls", "call_id": "k1", "text": "ls"},
            {"id": "r1", "kind": "environment", "tool": "ls", "call_id": "k1", "text": "a.txt"},
            {"id": "c2", "kind": "workflow", "action": "tool_call", "tool": "cat", "call_id": "k2", "text": "cat a.txt"},
            {"id": "r2", "kind": "environment", "tool": "cat", "call_id": "k2", "text": "hello"}
        ]
    });
    ok(chat(&["append"], &session.to_string()));
    let exported = || ok(chat(&["export"], ""))["context_management"].clone();
    assert_eq!(exported(), management);
    // Chunks alone leave it as it is.
    let answer = r#"{"id": "a1", "kind": "agent", "role": "assistant", "text": "It says hello."}"#;
    ok(chat(&["append"], answer));
    assert_eq!(exported(), management);
    // `chat build` builds with it (the older tool use is cleared) as
    // `build` does with the export, which carries it; the flag replaces it.
    let export = chat(&["export"], "");
    let nothing = ["--context-management", r#"{"edits": []}"#];
    for (flags, cleared) in [(&[][..], true), (&nothing[..], false)] {
        let stored = chat(&[&["build", "--output", "text"][..], flags].concat(), "");
        assert_eq!(stored.code, 0, "{}", stored.stderr);
        let stub = r#"<tool_result id="r1" tool="ls" call_id="k1" elided="#;
        assert_eq!(stored.stdout.contains(stub), cleared, "{}", stored.stdout);
        let cold = run(
            &[&["build", "-", "--output", "text"][..], flags].concat(),
            &export.stdout,
        );
        assert_eq!((stored.stdout, stored.stderr), (cold.stdout, cold.stderr));
    }
    let bad_flag = chat(&["build", "--context-management", r#"{"edits": 1}"#], "");
    assert_eq!(bad_flag.code, 2, "{}", bad_flag.stderr);
    assert_eq!(bad_flag.stdout, "");
    assert!(
        bad_flag
            .stderr
            .contains("invalid option `--context-management`"),
        "{}",
        bad_flag.stderr
    );
    // A bad one in the input is refused, and the chat keeps its own.
    let bad = r#"{"context_management": {"edits": [{"type": "clear_all"}]}, "chunks": []}"#;
    let refused = chat(&["append"], bad);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("field `context_management.edits[0].type`"),
        "{}",
        refused.stderr
    );
    assert_eq!(exported(), management);
    // Replaced by the next input that carries one, cleared with the lane.
    let none = json!({"edits": []});
    let replacing = json!({"context_management": none, "chunks": []});
    ok(chat(&["append"], &replacing.to_string()));
    assert_eq!(exported(), none);
    ok(chat(&["append", "--clear-system"], r#"{"chunks": []}"#));
    assert!(exported().is_null(), "{}", exported());
}

#[test]
fn numbers_past_64_bits_come_back_from_the_store_with_their_digits() {
    for (_held, db) in fresh_dbs("numbers") {
        numbers_past_64_bits_come_back_in(&db);
    }
}

fn numbers_past_64_bits_come_back_in(db: &str) {
    let data = common::wide_numbers_json();
    let session = format!(
        r#"{{"fragments": [{{"name": "account", "data": {data}}}], "chunks": [
            {{"id": "u1", "kind": "agent", "role": "user", "text": "pay it"}},
            {{"id": "w1", "kind": "workflow", "tool": "pay", "call_id": "k1", "data": {data}}}
        ]}}"#
    );
    ok(run(
        &["chat", "append", "--db", db, "--chat", "n"],
        &session,
    ));
    // A chunk of JSON Lines, in a second save.
    let line = format!(
        r#"{{"id": "e1", "kind": "environment", "call_id": "k1", "data": {data}, "custom": {data}}}"#
    );
    ok(run(&["chat", "append", "--db", db, "--chat", "n"], &line));
    let export = run(&["chat", "export", "--db", db, "--chat", "n"], "");
    common::assert_shows_wide_numbers(&export.stdout);
    let export = ok(export);
    common::assert_holds_wide_numbers(&export["fragments"][0]["data"], false);
    common::assert_holds_wide_numbers(&export["chunks"][1]["data"], false);
    common::assert_holds_wide_numbers(&export["chunks"][2]["data"], false);
    common::assert_holds_wide_numbers(&export["chunks"][2]["custom"], false);
    // A fresh process builds from the store and sends the same digits.
    let native = ok(run(
        &[
            "chat",
            "build",
            "--db",
            db,
            "--chat",
            "n",
            "--output",
            "openai-native",
        ],
        "",
    ));
    let arguments = &native["messages"][2]["tool_calls"][0]["function"]["arguments"];
    let arguments: Value = serde_json::from_str(arguments.as_str().unwrap()).unwrap();
    common::assert_holds_wide_numbers(&arguments, false);
}

/// The peak resident memory, in KiB, of the binary run with `args` (it
/// must succeed and print more than a pipe holds), read from
/// `/proc/<pid>/status` once its output starts: it writes all of it at
/// once, after its work, and then waits on the full pipe. (The kernel's
/// `ru_maxrss` would not do: a spawned child's starts from its parent's.)
fn peak_memory_kib(args: &[&str]) -> u64 {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agent-context"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn agent-context");
    let mut stdout = child.stdout.take().unwrap();
    let mut ready = libc::pollfd {
        fd: std::os::fd::AsRawFd::as_raw_fd(&stdout),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, for the duration of the call.
    let polled = unsafe { libc::poll(&mut ready, 1, 60_000) };
    assert_eq!(
        polled, 1,
        "agent-context {args:?} printed nothing within 60 s"
    );
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let mut output = Vec::new();
    std::io::Read::read_to_end(&mut stdout, &mut output).unwrap();
    assert!(
        child.wait().unwrap().success(),
        "agent-context {args:?} failed"
    );
    assert!(
        output.len() > 1 << 16,
        "agent-context {args:?} printed {} bytes, which a pipe holds: it may have ended \
         before its memory was read",
        output.len()
    );
    let peak = status.lines().find_map(|line| line.strip_prefix("VmHWM:"));
    let kib = peak.and_then(|value| value.trim().strip_suffix("kB"));
    kib.and_then(|kib| kib.trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in {status}"))
}

/// Reading a chat counts nothing, so its export never loads the tokenizer
/// tables (about 50 MB); a build of the same chat does. (An append does
/// too: it counts the chunks whose counts it keeps.)
#[test]
fn exporting_a_chat_never_loads_the_tokenizer_tables() {
    let (_dir, db) = fresh_db("tables");
    let chat = ["--db", db.as_str(), "--chat", "c"];
    for file in DATA {
        ok(run(
            &[&["chat", "append"][..], &chat, &[&data(file)]].concat(),
            "",
        ));
    }
    let export = peak_memory_kib(&[&["chat", "export"][..], &chat].concat());
    let build = peak_memory_kib(&[&["chat", "build"][..], &chat].concat());
    eprintln!("peak memory: export {export} KiB, build {build} KiB");
    assert!(
        export + 30_000 < build,
        "chat export peaked at {export} KiB, within 30 MB of chat build's {build} KiB: it \
         loaded the tables"
    );
}

/// A chat built again in a fresh process with nothing new counts only the
/// build's own texts (the system prompt, the marker, stubs), whose counts
/// the branch's build record keeps: it loads no tokenizer tables, and
/// sends the prompt a cold build of the export sends, on every backend.
/// (The research agent's chat: the coding agent's holds a tool result over
/// its default cap, whose cut every process counts again.)
#[test]
fn a_chat_built_again_loads_no_tokenizer_tables() {
    for (n, (_held, db)) in fresh_dbs("known").iter().enumerate() {
        let chat_id = format!("c{n}");
        let chat = ["chat", "build", "--db", db.as_str(), "--chat", &chat_id];
        appended_and_exported(db, &chat_id, DATA[1]);
        let whole = [&chat[..], &["--max-tokens", "200000"]].concat();
        let first = peak_memory_kib(&whole);
        let again = peak_memory_kib(&whole);
        eprintln!("peak memory: first chat build {first} KiB, again {again} KiB");
        assert!(
            again + 30_000 < first,
            "the chat built again peaked at {again} KiB, within 30 MB of its first build's \
             {first} KiB: it loaded the tables"
        );
        for file in DATA {
            let chat_id = format!("{chat_id}-{file}");
            let chat = ["chat", "build", "--db", db.as_str(), "--chat", &chat_id];
            let export = appended_and_exported(db, &chat_id, file);
            // Trimmed, with a marker and stubs, and under other settings.
            for flags in [
                &["--max-tokens", "4000", "--reserve", "500"][..],
                &["--max-tokens", "3000", "--output", "openai"],
                &["--max-tokens", "200000"],
            ] {
                let cold = ok(run(&[&["build", "-"][..], flags].concat(), &export));
                for build in ["first", "again"] {
                    let stored = ok(run(&[&chat[..], flags].concat(), ""));
                    // A build from the record reports what it read; the
                    // prompt is the same.
                    for field in ["messages", "token_count", "included", "elided"] {
                        let (stored, cold) = (&stored[field], &cold[field]);
                        assert_eq!(stored, cold, "{db} {file} {flags:?} {field}, built {build}");
                    }
                }
            }
        }
    }
}

/// A `chat build`'s output as `build` writes it: the report without the
/// `previous_build` a stored chat's report adds (see `stored_cache`).
fn without_previous_build(stdout: &str, output: &str) -> String {
    if output != "report" || stdout.is_empty() {
        return stdout.to_owned();
    }
    let mut report: Value = serde_json::from_str(stdout).unwrap();
    let previous = report.as_object_mut().unwrap().remove("previous_build");
    assert!(
        previous.is_some(),
        "a chat build's report says what it started from"
    );
    let mut text = serde_json::to_string_pretty(&report).unwrap();
    if stdout.ends_with('\n') {
        text.push('\n');
    }
    text
}
