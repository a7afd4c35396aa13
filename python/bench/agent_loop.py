"""A 200-turn agent loop at about 1M tokens, timed through agent_context's
Session and through LangChain's trim_messages, in one process.

Each turn adds a user message, a tool call, a 16 KB tool result and the
assistant's reply; the budget is 128k tokens (gpt-4o). A turn is timed
from the new messages to the budgeted messages:

* agent_context: ``session.extend(chunks)`` then ``session.build()``
  (``--output report``, the whole report as a dict) and
  ``session.build(output="openai")`` (the messages only), on two sessions;
* LangChain: ``trim_messages(history, max_tokens=128_000,
  strategy="last", start_on="human", token_counter=counter)``, where
  ``counter`` counts each message once with tiktoken's o200k_base (the
  OpenAI cookbook's framing: 3 + role + content, plus tool-call names and
  arguments) and memoizes the count per message.

Run: python bench/agent_loop.py [--turns 200] [--budget 128000] [--repeat 3] [--sequential]
Needs: agent_context, langchain-core, tiktoken. tiktoken fetches its
o200k_base table from the network on first use; offline, set
TIKTOKEN_O200K to a local o200k_base.tiktoken (the tiktoken-rs crate
ships one, found under ~/.cargo/registry when this repository's
dev-dependencies are fetched).
"""

import argparse
import glob
import json
import os
import random
import statistics
import sys
import time

import agent_context as ac

WORDS = (
    "the a of to in is for on with as by at from error warning ok test build "
    "src lib main fn let mut impl struct return value result config cargo "
    "token budget message tool call read write file path line column module "
    "crate version compile link pass fail assert expected found index item"
).split()


def tool_result(rng, size=16 * 1024):
    """A log-like text of `size` bytes."""
    lines, total = [], 0
    while total < size:
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))
        line = f"[{rng.randint(0, 99999):05d}] {words} {rng.random():.6f}"
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)[:size]


def turns(count, seed=7):
    """The loop's turns: (user, call arguments, result, reply) text."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        user = f"Step {i}: " + " ".join(rng.choice(WORDS) for _ in range(60))
        args = {"path": f"src/module_{i}.rs", "lines": [1, rng.randint(100, 900)]}
        result = tool_result(rng)
        reply = " ".join(rng.choice(WORDS) for _ in range(80))
        out.append((user, args, result, reply))
    return out


def chunks_of(i, turn):
    user, args, result, reply = turn
    call = f"call_{i}"
    return [
        {"id": f"u{i}", "kind": "agent", "role": "user", "text": user},
        {"id": f"c{i}", "kind": "workflow", "action": "tool_call", "tool": "read_file",
         "call_id": call, "data": args},
        {"id": f"r{i}", "kind": "environment", "tool": "read_file", "call_id": call,
         "success": True, "text": result},
        {"id": f"a{i}", "kind": "agent", "role": "assistant", "text": reply},
    ]


def o200k_encoding():
    import tiktoken

    local = os.environ.get("TIKTOKEN_O200K")
    if not local:
        try:
            return tiktoken.get_encoding("o200k_base")
        except Exception:
            pattern = os.path.expanduser(
                "~/.cargo/registry/src/*/tiktoken-rs-*/assets/o200k_base.tiktoken")
            found = sorted(glob.glob(pattern))
            if not found:
                sys.exit("tiktoken cannot fetch o200k_base: set TIKTOKEN_O200K to a local copy")
            local = found[-1]
    import tiktoken.load
    import tiktoken_ext.openai_public as public

    with open(local, "rb") as f:
        data = f.read()
    tiktoken.load.read_file_cached = lambda *_a, **_k: data
    return tiktoken.Encoding(**public.o200k_base())


def langchain_messages(i, turn):
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    user, args, result, reply = turn
    call = f"call_{i}"
    return [
        HumanMessage(user, id=f"u{i}"),
        AIMessage("", id=f"c{i}",
                  tool_calls=[{"id": call, "name": "read_file", "args": args}]),
        ToolMessage(result, tool_call_id=call, id=f"r{i}"),
        AIMessage(reply, id=f"a{i}"),
    ]


def cached_counter(encoding):
    """A trim_messages token_counter: the cookbook's framing, one tiktoken
    count per message, memoized by message identity."""
    cache = {}

    def count_one(message):
        key = id(message)
        hit = cache.get(key)
        if hit is not None and hit[0] is message:
            return hit[1]
        content = message.content if isinstance(message.content, str) else json.dumps(message.content)
        tokens = 3 + len(encoding.encode_ordinary(message.type)) + len(encoding.encode_ordinary(content))
        for call in getattr(message, "tool_calls", None) or []:
            tokens += len(encoding.encode_ordinary(call["name"]))
            tokens += len(encoding.encode_ordinary(json.dumps(call["args"])))
        cache[key] = (message, tokens)
        return tokens

    def counter(messages):
        return 3 + sum(count_one(m) for m in messages)

    return counter


def loops(data, budget, encoding):
    """The three loops, as generators: each step runs and times one turn."""
    from langchain_core.messages import trim_messages

    builder = ac.ContextBuilder(model="gpt-4o", max_tokens=budget)

    def session_loop(output):
        session = ac.Session(builder)
        for i, turn in enumerate(data):
            chunks = chunks_of(i, turn)
            start = time.perf_counter()
            session.extend(chunks)
            result = session.build(output=output)
            elapsed = time.perf_counter() - start
            if output is None:
                assert result["token_count"] <= budget
            yield elapsed, result

    def langchain_loop(counter):
        history = []
        for i, turn in enumerate(data):
            new = langchain_messages(i, turn)
            start = time.perf_counter()
            history.extend(new)
            kept = trim_messages(history, max_tokens=budget, strategy="last",
                                 start_on="human", token_counter=counter)
            yield time.perf_counter() - start, kept

    counter = cached_counter(encoding)
    return {"report": session_loop(None), "openai": session_loop("openai"),
            "langchain": langchain_loop(counter)}, counter


def run(data, budget, encoding, sequential=False):
    """Times every turn of the three loops: interleaved (each turn in each
    loop in turn, so the machine's load and caches weigh on all three
    alike), or one loop after the other."""
    steps, counter = loops(data, budget, encoding)
    times = {name: [] for name in steps}
    last = {}
    order = [[(name, step) for name, step in steps.items()]] * len(data)
    if sequential:
        order = [[(name, step)] for name, step in steps.items() for _ in data]
    for turn in order:
        for name, step in turn:
            elapsed, last[name] = next(step)
            times[name].append(elapsed)
    return times, last, counter


def ms(seconds):
    return f"{seconds * 1000:8.2f} ms"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--budget", type=int, default=128_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sequential", action="store_true",
                        help="run the loops one after the other, not turn by turn")
    args = parser.parse_args()

    data = turns(args.turns)
    encoding = o200k_encoding()
    total = sum(ac.count(json.dumps(chunks_of(i, t))) for i, t in enumerate(data))
    print(f"{args.turns} turns, about {total:,} tokens of session JSON, budget {args.budget:,}")

    # Warm both: load the tokenizer tables, import LangChain.
    ac.count("warm up")
    encoding.encode_ordinary("warm up")
    run(data[:2], args.budget, encoding)

    medians = {"report": [], "openai": [], "langchain": []}
    for _ in range(args.repeat):
        times, last, counter = run(data, args.budget, encoding, args.sequential)
        for name, series in times.items():
            medians[name].append(statistics.median(series[1:]))  # every turn but the first
    report, openai, lc_last = last["report"], last["openai"], last["langchain"]
    lc_tokens = counter(lc_last)
    lc_median = statistics.median(medians["langchain"])
    rows = [
        ("agent_context Session.build() (report)", "report", report["token_count"]),
        ("agent_context Session.build(output='openai')", "openai", report["token_count"]),
        ("LangChain trim_messages, cached tiktoken", "langchain", lc_tokens),
    ]
    mode = "one loop after the other" if args.sequential else "loops interleaved turn by turn"
    print(f"warm turn, median of {args.repeat} runs' medians over turns 2-{args.turns}, {mode}")
    print(f"{'':46} {'median':>11} {'p90':>11}  {'tokens kept':>11}  vs LangChain")
    for name, key, tokens in rows:
        median = statistics.median(medians[key])
        p90 = sorted(times[key][1:])[int(len(times[key][1:]) * 0.9)]
        print(f"{name:46} {ms(median)} {ms(p90)}  {tokens:>11,}  {median / lc_median:6.2f}x")
    print(f"messages out: agent_context {len(openai['messages'])} "
          f"(old tool results as stubs), LangChain {len(lc_last)}")


if __name__ == "__main__":
    main()
