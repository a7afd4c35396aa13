"""Engine: the `chat` verbs; `Engine.build` equals `agent-context chat build`
on the same store."""

import json
import os
import shutil

import pytest

import agent_context as ac

from test_build import NUMBERS_SESSION, OUTPUTS, assert_numbers_kept


@pytest.fixture()
def store(tmp_path, sessions):
    path, _ = sessions["coding-agent"]
    db = tmp_path / "agent.db"
    engine = ac.Engine(str(db), chat="run-42")
    out = engine.append(json.loads(path.read_text()))
    assert out == {"chat": "run-42", "branch": "main", "head": 40, "appended": 40}
    return db, engine


@pytest.mark.filterwarnings("ignore::agent_context.ContextWarning")
@pytest.mark.parametrize("output", OUTPUTS)
def test_build_equals_chat_build(cli, store, output):
    db, engine = store
    # A build keeps a record its branch's next build extends: the CLI builds
    # a copy of the store, so both builds start from the same one.
    copy = db.with_name("copy.db")
    for suffix in ("", "-wal"):
        if os.path.exists(f"{db}{suffix}"):
            shutil.copy(f"{db}{suffix}", f"{copy}{suffix}")
    flags = ["--max-tokens", "4000", "--reserve", "500", "--cap", "tool_result=800"]
    done = cli.run("chat", "build", "--db", copy, "--chat", "run-42", *flags, "--output", output)
    expected = done.stdout if output == "text" else json.loads(done.stdout)
    got = engine.build(max_tokens=4000, reserve=500, caps={"tool_result": 800}, output=output)
    assert got == expected
    if output == "report":
        assert got["previous_build"] == "none_kept"
        again = engine.build(max_tokens=4000, reserve=500, caps={"tool_result": 800})
        assert again["previous_build"] == "extended"
        assert again["messages"] == got["messages"]


def test_export_equals_chat_export_and_build(cli, store, sessions):
    db, engine = store
    exported = engine.export()
    assert exported == cli.json("chat", "export", "--db", db, "--chat", "run-42")
    built = engine.build(max_tokens=5000)
    assert built.pop("previous_build") == "none_kept"
    assert built == ac.build(exported, max_tokens=5000)


def test_engine_builds_return_the_sessions_prompts(tmp_path):
    """Each `Engine.build` opens the store afresh, as `chat build` does, and
    extends the branch's last build: the prompts a Session returns."""
    from test_session import turn

    engine = ac.Engine(str(tmp_path / "loop.db"), chat="loop")
    session = ac.Session(ac.ContextBuilder(max_tokens=12_000, reserve=1000))
    stable = {"engine": 0, "session": 0}
    for i in range(40):
        engine.append(turn(i))
        session.extend(turn(i))
        got = engine.build(max_tokens=12_000, reserve=1000)
        expected = session.build()
        assert got["messages"] == expected["messages"], i
        assert got.get("stable_prefix_tokens") == expected.get("stable_prefix_tokens"), i
        assert got["previous_build"] == ("none_kept" if i == 0 else "extended")
    assert any(d["decision"] == "dropped" for d in got["decisions"]), "40 turns must trim"


def test_checkpoint_restore_fork_rewind_switch(cli, store):
    db, engine = store
    assert engine.checkpoint("cp") == {"chat": "run-42", "checkpoint": "cp", "node": 40}
    with pytest.raises(ac.ChatError, match="pass --force"):
        engine.checkpoint("cp")
    engine.append([{"id": "u99", "kind": "agent", "role": "user", "text": "Try again."}])
    assert len(engine.export()["chunks"]) == 41
    restored = engine.restore("cp")
    assert restored == {"chat": "run-42", "branch": "main-v2", "head": 40}
    assert len(engine.export()["chunks"]) == 40  # the active branch is the restored one
    assert engine.fork("try-2") == {"chat": "run-42", "branch": "try-2", "head": 40}
    rewound = engine.rewind(to="c10", name="retry")
    assert rewound["branch"] == "retry" and len(engine.export()["chunks"]) == 9
    assert engine.switch("main")["head"] == 41
    branches = engine.branches()
    assert branches == cli.json("chat", "branches", "--db", db, "--chat", "run-42")
    assert {b["name"] for b in branches["branches"]} == {"main", "main-v2", "try-2", "retry"}
    assert branches["checkpoints"] == [{"name": "cp", "node": 40}]
    assert engine.chats()["chats"][0]["id"] == "run-42"
    pinned = ac.Engine(str(db), chat="run-42", branch="retry")
    assert len(pinned.export()["chunks"]) == 9


def test_append_takes_every_shape(tmp_path):
    engine = ac.Engine(str(tmp_path / "s.db"), chat="c")
    assert engine.append({"id": "u1", "kind": "agent", "role": "user", "text": "a"})["appended"] == 1
    assert engine.append('{"id": "a1", "kind": "agent", "role": "assistant", "text": "b"}')["head"] == 2
    jsonl = '{"id": "u2", "kind": "agent", "role": "user", "text": "c"}\n' \
            '{"id": "a2", "kind": "agent", "role": "assistant", "text": "d"}\n'
    assert engine.append(jsonl)["appended"] == 2
    replaced = engine.append({"id": "a3", "kind": "agent", "role": "assistant", "text": "e"},
                             replace_last_assistant=True)
    assert replaced["replaced"] is True
    assert engine.append({"system_prompt": "Be brief.", "chunks": []})["appended"] == 0
    assert engine.export()["system_prompt"] == "Be brief."


def test_store_errors(tmp_path):
    missing = ac.Engine(str(tmp_path / "none.db"), chat="x")
    with pytest.raises(ac.StoreError):
        missing.build()
    assert not (tmp_path / "none.db").exists()
    engine = ac.Engine(str(tmp_path / "s.db"), chat="c")
    engine.append({"id": "u1", "kind": "agent", "role": "user", "text": "a"})
    with pytest.raises(ac.StoreError, match="no checkpoint"):
        engine.restore("nope")
    with pytest.raises(ac.InputError):
        engine.append({"id": "u1", "kind": "agent", "role": "user", "text": "duplicate"})
    with pytest.raises(ac.InputError):
        ac.Engine(str(tmp_path / "s.db"), chat="")
    not_a_store = tmp_path / "text.db"
    not_a_store.write_text("hello")
    with pytest.raises(ac.StoreError):
        ac.Engine(str(not_a_store), chat="c").append({"id": "u", "kind": "agent", "role": "user", "text": "a"})


def test_export_keeps_every_digit(cli, tmp_path):
    path = tmp_path / "numbers.json"
    path.write_text(NUMBERS_SESSION)
    expected = cli.run("build", path, "--output", "text").stdout
    engine = ac.Engine(str(tmp_path / "n.db"), chat="n")
    engine.append(NUMBERS_SESSION)
    exported = engine.export()
    assert_numbers_kept(exported["chunks"][1]["data"])
    assert ac.build(exported, output="text") == expected
    again = ac.Engine(str(tmp_path / "n.db"), chat="again")
    again.append(exported)
    assert again.build(output="text") == expected
    assert again.export()["chunks"] == exported["chunks"]


def no_store(tmp_path, kind):
    """A --db that names no store: a device, a directory, nothing, a text file."""
    if kind == "text":
        path = tmp_path / "notes.txt"
        path.write_text("hello")
        return str(path)
    return {"device": os.devnull, "directory": str(tmp_path), "empty": ""}[kind]


@pytest.mark.parametrize("kind", ["device", "directory", "empty", "text"])
@pytest.mark.parametrize("verb", ["append", "build", "export"])
def test_a_db_that_is_no_store_is_a_chat_error(cli, tmp_path, kind, verb):
    db = no_store(tmp_path, kind)
    chunk = {"id": "u", "kind": "agent", "role": "user", "text": "a"}
    (tmp_path / "chunk.json").write_text(json.dumps(chunk))
    args = [tmp_path / "chunk.json"] if verb == "append" else []
    done = cli.run("chat", verb, "--db", db, "--chat", "c", *args, check=False)
    assert done.returncode == 2
    engine = ac.Engine(db, chat="c")  # opens nothing
    call = {"append": lambda: engine.append(chunk), "build": engine.build,
            "export": engine.export}[verb]
    with pytest.raises(ac.ChatError) as raised:
        call()
    assert isinstance(raised.value, ac.InputError)
    assert str(raised.value) == done.stderr.splitlines()[0][len("error: "):]


def test_a_path_object_names_the_store(tmp_path):
    chunk = {"id": "u", "kind": "agent", "role": "user", "text": "a"}
    engine = ac.Engine(tmp_path / "p.db", chat="c")
    engine.append(chunk)
    assert engine.db == str(tmp_path / "p.db")
    assert ac.Engine(str(tmp_path / "p.db"), chat="c").export()["chunks"][0]["id"] == "u"
