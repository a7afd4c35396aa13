"""Compaction: `Engine.plan_compaction` / `apply_compaction` are `agent-context
chat compact --plan` / `--apply`, `Session` plans and applies on its own
history, and the `compact_at` build keyword reports `compaction_due`."""

import json
import os
import shutil

import pytest

import agent_context as ac

from test_session import turn

STEPS = 24
SETTINGS = dict(max_tokens=16_000, reserve=500, caps={"tool_result": 2000})
FLAGS = ["--max-tokens", "16000", "--reserve", "500", "--cap", "tool_result=2000"]
SUMMARY = "Goal: read every module. Progress: read m0 to m20; nothing is wrong yet."
NATIVE = {
    "anthropic": {"type": "compaction", "content": "The agent read m0 to m20."},
    "openai": {"type": "compaction", "encrypted_content": "gAAAAB-opaque==", "id": "cmp_1"},
}


def loop_chunks(steps=STEPS, start=0):
    return [chunk for i in range(start, start + steps) for chunk in turn(i)]


@pytest.fixture()
def store(tmp_path):
    """A SQLite chat of a long tool loop (each step a call and a ~4k-token result)."""
    db = tmp_path / "loop.db"
    engine = ac.Engine(str(db), chat="loop")
    assert engine.append(loop_chunks())["head"] == 4 * STEPS
    return db, engine


def copy_store(db, name):
    copy = db.with_name(name)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{db}{suffix}"):
            shutil.copy(f"{db}{suffix}", f"{copy}{suffix}")
    return copy


@pytest.mark.parametrize("output", ["messages", "openai", "anthropic"])
def test_plan_equals_chat_compact_plan(cli, store, output):
    db, engine = store
    got = engine.plan_compaction(**SETTINGS, keep_tokens=3000, summary_tokens=1000,
                                 summarizer_max_tokens=40_000, output=output,
                                 instructions="Summarize for the agent, tersely.")
    expected = cli.json("chat", "compact", "--db", db, "--chat", "loop", "--plan", *FLAGS,
                        "--keep-tokens", "3000", "--summary-tokens", "1000",
                        "--summarizer-max-tokens", "40000", "--output", output,
                        "--instructions", "Summarize for the agent, tersely.")
    assert got == expected
    assert set(got) == {"plan", "covers", "folded", "remaining", "request", "request_tokens",
                        "request_tokens_exact", "summary_tokens"}
    assert got["plan"].startswith("acp1.") and got["summary_tokens"] == 1000
    assert got["request_tokens"] <= 40_000 - 1000
    assert "Summarize for the agent, tersely." in json.dumps(got["request"])
    if output == "messages":
        assert [m["role"] for m in got["request"]] == ["system", "user"]
    elif output == "openai":
        assert {"model", "messages", "max_completion_tokens"} <= set(got["request"])
    else:
        assert {"model", "max_tokens", "system", "messages"} <= set(got["request"])
    # Planning writes nothing; the defaults are the CLI's too.
    assert len(engine.export()["chunks"]) == 4 * STEPS
    assert engine.plan_compaction(**SETTINGS) == cli.json(
        "chat", "compact", "--db", db, "--chat", "loop", "--plan", *FLAGS)


def test_nothing_to_fold_says_why(cli, tmp_path):
    db = tmp_path / "short.db"
    engine = ac.Engine(str(db), chat="short")
    engine.append(loop_chunks(2))
    got = engine.plan_compaction(**SETTINGS, keep_tokens=12_000)
    assert got["plan"] is None and "keep_tokens" in got["reason"]
    assert got == cli.json("chat", "compact", "--db", db, "--chat", "short", "--plan", *FLAGS,
                           "--keep-tokens", "12000")
    with pytest.raises(ac.InputError, match="nothing to fold"):
        engine.apply_compaction(got, SUMMARY, **SETTINGS)


def test_apply_then_build_shows_the_summary(cli, store):
    db, engine = store
    plan = engine.plan_compaction(**SETTINGS, keep_tokens=3000)
    before = engine.build(**SETTINGS)
    assert "compaction" not in before
    # The CLI applies the same plan to a copy of the store alike.
    copy = copy_store(db, "copy.db")
    summary_file = db.with_name("summary.txt")
    summary_file.write_text(SUMMARY)
    expected = cli.json("chat", "compact", "--db", copy, "--chat", "loop", *FLAGS,
                        "--apply", plan["plan"], "--summary", summary_file)

    applied = engine.apply_compaction(plan["plan"], SUMMARY, **SETTINGS)
    assert applied == expected
    assert applied["chat"] == "loop" and applied["branch"] == "main"
    assert applied["head"] == 4 * STEPS + 1 and applied["covers"] == plan["covers"]
    assert applied["tokens_before"] == plan["folded"]["tokens"]
    assert 0 < applied["tokens_after"] < applied["tokens_before"]
    assert engine.export() == cli.json("chat", "export", "--db", copy, "--chat", "loop")

    report = engine.build(**SETTINGS)
    assert report["compaction"] == {"id": applied["compaction"], "covers": plan["covers"],
                                    "chunks": plan["folded"]["chunks"],
                                    "tokens": plan["folded"]["tokens"]}
    shown = [c for m in report["messages"] for c in m["chunk_ids"]]
    assert applied["compaction"] in shown
    summary_message = next(m for m in report["messages"] if applied["compaction"] in m["chunk_ids"])
    assert SUMMARY in summary_message["content"]
    compacted = [d for d in report["decisions"] if d.get("reason") == "compacted"]
    assert compacted and all(d["decision"] == "dropped" for d in compacted)
    assert not {"c0", "r0", "a0"} & set(shown), "the span's steps are folded"
    # The plan token also comes as the dict plan_compaction returned.
    engine.append(loop_chunks(6, start=STEPS))
    again = engine.plan_compaction(**SETTINGS, keep_tokens=3000)
    second = engine.apply_compaction(again, "Read m0 to m26.", **SETTINGS)
    assert engine.build(**SETTINGS)["compaction"]["id"] == second["compaction"]


def test_a_plan_applies_once_and_a_refusal_writes_nothing(cli, store):
    db, engine = store
    plan = engine.plan_compaction(**SETTINGS, keep_tokens=3000)
    engine.apply_compaction(plan["plan"], SUMMARY, **SETTINGS)
    exported = engine.export()
    head = engine.branches()
    with pytest.raises(ac.InputError, match="another compaction") as raised:
        engine.apply_compaction(plan["plan"], SUMMARY, **SETTINGS)
    assert isinstance(raised.value, ac.CompactionError)
    assert not isinstance(raised.value, ac.StoreError)
    assert engine.export() == exported and engine.branches() == head
    # The CLI refuses it with exit status 2 and the same message.
    summary_file = db.with_name("summary.txt")
    summary_file.write_text(SUMMARY)
    done = cli.run("chat", "compact", "--db", db, "--chat", "loop", *FLAGS, "--apply",
                   plan["plan"], "--summary", summary_file, check=False)
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == f"error: {raised.value}"
    assert len(engine.export()["chunks"]) == len(exported["chunks"])


def test_a_plan_holds_only_under_its_settings(store):
    _, engine = store
    plan = engine.plan_compaction(**SETTINGS, keep_tokens=3000)["plan"]
    length = len(engine.export()["chunks"])
    for changed in ({"max_tokens": 20_000}, {"caps": {"tool_result": 500}}, {"model": "gpt-4.1"}):
        with pytest.raises(ac.CompactionError, match="other settings"):
            engine.apply_compaction(plan, SUMMARY, **{**SETTINGS, **changed})
    forged = plan.replace("acp1.", "acp1.00", 1)
    with pytest.raises(ac.CompactionError, match="plan again"):
        engine.apply_compaction(forged, SUMMARY, **SETTINGS)
    with pytest.raises(ac.CompactionError, match="empty"):
        engine.apply_compaction(plan, "   ", **SETTINGS)
    assert len(engine.export()["chunks"]) == length
    engine.apply_compaction(plan, SUMMARY, **SETTINGS)
    assert len(engine.export()["chunks"]) == length + 1


def test_compact_at_reports_compaction_due(cli, tmp_path):
    engine = ac.Engine(str(tmp_path / "due.db"), chat="due")
    engine.append(loop_chunks(2))
    assert "compaction_due" not in engine.build(**SETTINGS)
    # 0.9 of the 15,500 tokens available: due once the untrimmed history costs more.
    assert engine.build(**SETTINGS, compact_at=0.9)["compaction_due"] is False
    assert engine.build(**SETTINGS, compact_at=10)["compaction_due"] is True
    assert engine.build(**SETTINGS, compact_at=0)["compaction_due"] is True
    engine.append(loop_chunks(STEPS - 2, start=2))
    report = engine.build(**SETTINGS, compact_at=0.9)
    assert report["compaction_due"] is True
    assert report["token_count"] <= 15_500, "the prompt itself is trimmed to fit"
    assert engine.build(**SETTINGS, compact_at=10 ** 9)["compaction_due"] is False
    assert engine.build(**SETTINGS, compact_at=100.0)["compaction_due"] is False

    plan = engine.plan_compaction(**SETTINGS, compact_at=0.9, keep_tokens=3000)
    engine.apply_compaction(plan["plan"], SUMMARY, **SETTINGS, compact_at=0.9)
    assert engine.build(**SETTINGS, compact_at=0.9)["compaction_due"] is False

    # ac.build and the builder's say what `agent-context build --compact-at` says.
    path = tmp_path / "session.json"
    session = engine.export()
    path.write_text(json.dumps(session))
    for keyword, flag in ((0.9, "0.9"), (0.25, "0.25"), (5000, "5000")):
        expected = cli.json("build", path, *FLAGS, "--compact-at", flag)
        assert ac.build(session, **SETTINGS, compact_at=keyword) == expected
        builder = ac.ContextBuilder(**SETTINGS, compact_at=keyword)
        assert builder.build(session) == expected
        assert builder.options()["compact_at"] == keyword
        assert ac.Session(builder, session).build()["compaction_due"] == expected["compaction_due"]
    assert ac.ContextBuilder(**SETTINGS, compact_at=0.9).with_options(
        compact_at=None).build(session) == ac.build(session, **SETTINGS)


@pytest.mark.parametrize("value, error, message", [
    (-1, ac.InputError, "invalid value for compact_at: -1 is not a number of tokens"),
    (0.0, ac.InputError, "invalid value for compact_at: 0.0 is not a positive fraction"),
    (-0.5, ac.InputError, "-0.5 is not a positive fraction"),
    (float("nan"), ac.InputError, "nan is not a positive fraction"),
    (float("inf"), ac.InputError, "inf is not a positive fraction"),
    (2 ** 70, ac.InputError, "is too large; the largest is"),
    (True, TypeError, "compact_at must be an int (tokens) or a float (a fraction of the "
                      "budget), not bool"),
    ("0.5", TypeError, "not str"),
    ([1], TypeError, "not list"),
])
def test_bad_compact_at_values(value, error, message):
    session = {"chunks": loop_chunks(1)}
    with pytest.raises(error) as raised:
        ac.build(session, compact_at=value)
    assert message in str(raised.value)
    with pytest.raises(error):
        ac.ContextBuilder(compact_at=value)
    with pytest.raises(error):
        ac.Engine("unused.db", chat="c").build(compact_at=value)


def test_session_plans_applies_and_builds():
    builder = ac.ContextBuilder(**SETTINGS, compact_at=0.9)
    session = ac.Session(builder, {"system_prompt": "You read code."})
    session.extend(loop_chunks())
    assert session.build()["compaction_due"] is True
    plan = session.plan_compaction(keep_tokens=3000, summary_tokens=1000)
    assert plan["plan"].startswith("acp1.") and plan["summary_tokens"] == 1000
    assert len(session) == 4 * STEPS, "planning changes nothing"

    # A summary not smaller than its span is refused, and the session is unchanged.
    big = "x " * (plan["folded"]["tokens"] + 10)
    with pytest.raises(ac.CompactionError, match="not smaller") as raised:
        session.apply_compaction(plan["plan"], big)
    assert isinstance(raised.value, ac.InputError)
    assert len(session) == 4 * STEPS

    # A build of another output in between leaves the plan standing.
    session.build(output="anthropic")
    applied = session.apply_compaction(plan, SUMMARY)
    assert all(applied.get(key) is None for key in ("chat", "branch", "head")), "no chat"
    assert applied["covers"] == plan["covers"]
    assert applied["tokens_before"] == plan["folded"]["tokens"]
    assert len(session) == 4 * STEPS + 1
    chunk = session.state()["chunks"][-1]
    assert (chunk["id"], chunk["kind"], chunk["covers"]) == (
        applied["compaction"], "compaction", plan["covers"])

    report = session.build()
    assert report["compaction"]["id"] == applied["compaction"]
    assert report["compaction_due"] is False
    assert any(SUMMARY in m["content"] for m in report["messages"])
    # The same plan again is stale.
    with pytest.raises(ac.CompactionError, match="another compaction"):
        session.apply_compaction(plan, SUMMARY)
    assert len(session) == 4 * STEPS + 1


def test_session_and_engine_plan_the_same_span(store):
    _, engine = store
    session = ac.Session(ac.ContextBuilder(**SETTINGS), engine.export())
    by_session = session.plan_compaction(keep_tokens=3000, output="openai")
    by_engine = engine.plan_compaction(**SETTINGS, keep_tokens=3000, output="openai")
    assert by_session.pop("plan") != by_engine.pop("plan"), "a plan names its chat"
    assert by_session == by_engine
    with pytest.raises(ac.CompactionError, match="plan again"):
        session.apply_compaction(engine.plan_compaction(**SETTINGS)["plan"], SUMMARY)


def test_native_items_round_trip_into_the_chunk(cli, store):
    db, engine = store
    plan = engine.plan_compaction(**SETTINGS, keep_tokens=3000)
    applied = engine.apply_compaction(plan["plan"], SUMMARY, native=NATIVE, **SETTINGS)
    chunk = engine.export()["chunks"][-1]
    assert chunk["id"] == applied["compaction"] and chunk["kind"] == "compaction"
    assert chunk["native"] == NATIVE
    assert chunk["text"] == SUMMARY
    assert engine.export() == cli.json("chat", "export", "--db", db, "--chat", "loop")
    # As JSON text, one provider alone, in a session.
    session = ac.Session(ac.ContextBuilder(**SETTINGS), {"chunks": loop_chunks()})
    plan = session.plan_compaction(keep_tokens=3000)
    one = {"openai": NATIVE["openai"]}
    session.apply_compaction(plan["plan"], SUMMARY, native=json.dumps(one))
    assert session.state()["chunks"][-1]["native"] == one


@pytest.mark.parametrize("native, message", [
    ({"google": {"type": "compaction"}}, "native.google"),
    ({"anthropic": {"type": "text", "text": "x"}}, "native.anthropic.type"),
    ([1, 2], "invalid option `native`: native: expected an object"),
    ("{not json", "invalid option `native`: invalid JSON"),
])
def test_a_bad_native_item_is_an_input_error(store, native, message):
    _, engine = store
    plan = engine.plan_compaction(**SETTINGS, keep_tokens=3000)["plan"]
    length = len(engine.export()["chunks"])
    with pytest.raises(ac.InputError, match=message):
        engine.apply_compaction(plan, SUMMARY, native=native, **SETTINGS)
    assert len(engine.export()["chunks"]) == length


def test_compaction_keywords(store, tmp_path):
    _, engine = store
    with pytest.raises(ac.InputError, match="not a request format"):
        engine.plan_compaction(output="report")
    with pytest.raises(TypeError, match="unexpected keyword argument \"explain\""):
        engine.plan_compaction(explain=True)
    with pytest.raises(TypeError, match="unexpected keyword argument \"keep_token\""):
        engine.plan_compaction(keep_token=5)
    with pytest.raises(TypeError, match="unexpected keyword argument \"output\""):
        engine.apply_compaction("acp1.x", SUMMARY, output="openai")
    with pytest.raises(TypeError, match="unexpected keyword argument \"keep_tokens\""):
        engine.apply_compaction("acp1.x", SUMMARY, keep_tokens=5)
    with pytest.raises(TypeError, match="keep_tokens must be an int, not bool"):
        engine.plan_compaction(keep_tokens=True)
    with pytest.raises(TypeError, match="summary must be a str, not bytes"):
        engine.apply_compaction("acp1.x", b"summary")
    with pytest.raises(ac.InputError, match="summary is not valid text"):
        engine.apply_compaction("acp1.x", "a\ud800")
    with pytest.raises(ac.InputError, match="larger than the limit"):
        engine.plan_compaction(instructions="x" * 100, max_input_bytes=10)
    session = ac.Session()
    with pytest.raises(TypeError, match="unexpected keyword argument \"max_tokens\""):
        session.plan_compaction(max_tokens=5)
    assert session.plan_compaction()["plan"] is None
    # A chat that does not exist is named wrong, as for `chat build`.
    with pytest.raises(ac.ChatError):
        ac.Engine(str(tmp_path / "none.db"), chat="x").plan_compaction()
    with pytest.raises(ac.ChatError):
        ac.Engine(engine.db, chat="nope").apply_compaction("acp1.x", SUMMARY)


def test_the_exception_class():
    assert issubclass(ac.CompactionError, ac.InputError)
    assert issubclass(ac.CompactionError, ValueError)
    assert not issubclass(ac.CompactionError, ac.StoreError)
    assert "CompactionError" in ac.__all__


def test_a_compaction_pushed_by_hand_covers_an_earlier_chunk(tmp_path):
    chunks = loop_chunks()
    covers = chunks[len(chunks) // 2]["id"]
    compaction = {"id": "x1", "kind": "compaction", "covers": covers, "text": "Read half."}
    session = ac.Session(ac.ContextBuilder(**SETTINGS), {"chunks": chunks})
    session.push(compaction)
    assert session.build()["compaction"]["id"] == "x1"
    with pytest.raises(ac.InputError, match="not a chunk before"):
        session.push({"id": "x2", "kind": "compaction", "covers": "nope", "text": "s"})
    engine = ac.Engine(str(tmp_path / "hand.db"), "hand")
    engine.append({"chunks": chunks})
    engine.append(compaction)
    assert engine.build(**SETTINGS)["compaction"]["id"] == "x1"
