"""Team memory through PostgreSQL on loopback: push and pull rates, the time from a push
on one machine to an injection on another, and the server's bytes per event.

python -m bench.sync [--events 20000] [--runs 5] [--write]

Starts a throwaway server (bench.postgres: Debian's PostgreSQL, as an unprivileged
user) unless ``--url`` names one (its password from PGPASSWORD/.pgpass). Not part of
``make bench``: it needs the server binaries. ``--write`` replaces the "Sync" section
of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench.report import machine, synthetic_jsonl, write_section
from memplug.memory import Memory
from memplug.recall.assemble import AssemblyRequest
from memplug.sync import exchange
from memplug.sync.postgres import Server

OFF = {"extraction": {"enabled": False}}


@contextlib.contextmanager
def _server(url: str | None) -> Iterator[tuple[str, str]]:
    """``(url, where)``: the server given, or a new database on a throwaway one."""
    if url:
        yield url, "the server given with --url"
        return
    from bench.postgres import PASSWORD, running_server

    os.environ["PGPASSWORD"] = PASSWORD
    with running_server() as server:
        yield server.url(server.create_database()), "a throwaway server (bench.postgres)"


def _machine(path: Path, url: str, origin: str, config: dict[str, object] | None = None) -> Memory:
    memory = Memory.open(path, config=config)
    exchange.init(memory, url, origin)
    return memory


def _push_on_a_inject_on_b(a: Memory, b: Memory, runs: int) -> list[float]:
    """Milliseconds from the start of A's push of one new decision to B's assembled
    message that quotes it (B's pull and derivation included)."""
    samples = []
    for run in range(runs):
        word = f"codename{run}x"
        line = json.dumps(
            {
                "session_id": "latency",
                "seq": run,
                "type": "user/message",
                "role": "user",
                "text": f"Decision: the release is called {word}.",
                "project": "shop",
            }
        )
        a.import_jsonl([("-", io.BytesIO(line.encode() + b"\n"))])
        start = time.perf_counter()
        exchange.run(a, pull=False)
        exchange.run(b, push=False)
        result = b.assemble(
            AssemblyRequest(session_id="bench-b", query=f"what is the release called {word}")
        )
        samples.append((time.perf_counter() - start) * 1000)
        assert word in (result.text or ""), "the decision was not injected on B"
    return samples


def _hook_with_the_server_down(runs: int) -> dict[str, dict[str, float]]:
    """UserPromptSubmit hook latency (bench.hook_latency's setup, 10,000 events) before
    sync is set up and after it points at a server that is down (nothing listens on its
    port): hooks never touch the network, so the two should match."""
    from bench.hook_latency import PROMPT, _payload, _populate, _stats, _timed
    from bench.postgres import free_port

    with tempfile.TemporaryDirectory() as tmp:
        db, projects = _populate(Path(tmp), 10_000)
        env = {**os.environ, "MEMPLUG_DB": str(db)}
        hook = [sys.executable, "-m", "memplug.cli", "hook", "claude-code"]
        prompt = _payload(projects, "UserPromptSubmit", prompt=PROMPT)
        before = _stats(_timed(hook, prompt, runs, env))
        with Memory.open(db) as memory, memory.store.write_transaction():
            down = f"host=127.0.0.1 port={free_port()} user=ana dbname=team"
            memory.store.sync.set_remote(down, "ana")
            for session in memory.store.events.sessions():
                if session["project"]:
                    memory.store.sync.share(session["project"])
        return {"no sync set up": before, "server down": _stats(_timed(hook, prompt, runs, env))}


def run(url: str | None, count: int, runs: int) -> str:
    load = os.getloadavg()[0]
    data = synthetic_jsonl(count)
    with tempfile.TemporaryDirectory() as tmp, _server(url) as (server_url, where):
        root = Path(tmp)
        with _machine(root / "a.sqlite", server_url, "ana", OFF) as a:
            a.import_jsonl([("-", io.BytesIO(data))])
            for project in {s["project"] for s in a.store.events.sessions() if s["project"]}:
                exchange.share(a, project)
            start = time.perf_counter()
            pushed = exchange.run(a, pull=False).pushed
            push_s = time.perf_counter() - start
        assert pushed == count, pushed
        with _machine(root / "b.sqlite", server_url, "bob", OFF) as b:
            start = time.perf_counter()
            pulled = exchange.run(b, push=False).pulled
            pull_s = time.perf_counter() - start
        assert pulled == count, pulled
        with Memory.open(root / "b.sqlite") as b:
            start = time.perf_counter()
            b.derive(b.store.events.session_ids())
            derive_s = time.perf_counter() - start
        server = Server.connect(server_url)
        try:
            stats = server.stats()
        finally:
            server.close()
        with (
            _machine(root / "a2.sqlite", server_url, "ana2") as a,
            _machine(root / "b2.sqlite", server_url, "bob2") as b,
        ):
            exchange.share(a, "shop")
            hello = {"session_id": "bench-b", "seq": 0, "type": "user/message", "text": "hi"}
            hello["project"] = "shop"
            b.import_jsonl([("-", io.BytesIO((json.dumps(hello) + "\n").encode()))])
            exchange.run(b, push=False)  # B holds what the server holds before the clock runs
            latency = _push_on_a_inject_on_b(a, b, runs)
    hooks = _hook_with_the_server_down(max(runs, 20))
    hook_rows = "\n".join(
        f"| UserPromptSubmit hook, 10,000 events, {name} (wall p50 / p95, CPU p50) "
        f"| {p['p50']:,.0f} / {p['p95']:,.0f} ms, CPU {p['cpu50']:,.0f} ms | equal |"
        for name, p in hooks.items()
    )
    return f"""Command: `python -m bench.sync --events {count} --runs {runs}` (not part of `make bench`: it
needs PostgreSQL's server binaries). Server: {where}, PostgreSQL over loopback TCP with
password authentication. Machine: {machine()}; 1-minute load average {load:.1f} at the
start (the machine is shared: wall times stretch with it, the CPU times of the hook rows
do not).

| measure | figure | target |
| --- | --- | --- |
| push (`memory sync --push`: read, redact, COPY, insert; {count:,} synthetic events) | {count / push_s:,.0f} events/s | ≥ 5,000 |
| pull (`memory sync --pull`: read by the commit-ordered cursor, capture; extraction off) | {count / pull_s:,.0f} events/s | ≥ 5,000 |
| pull and derive (the same, then extraction as `memory sync` runs it) | {count / (pull_s + derive_s):,.0f} events/s | report |
| from a push on A to an injection on B (A's push, B's pull and derivation, B's assembly; one new decision, median of {runs}) | {statistics.median(latency):,.0f} ms (max {max(latency):,.0f}) | report |
| server bytes per event (`pg_total_relation_size('memplug_events')` ÷ rows: table, TOAST, indexes) | {stats["bytes"] / stats["events"]:,.0f} bytes ({stats["bytes"]:,} / {stats["events"]:,}) | report |
{hook_rows}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", help="a libpq connection string (default: a throwaway server)")
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="replace docs/benchmarks.md's Sync")
    args = parser.parse_args()
    body = run(args.url, args.events, args.runs)
    print(body)
    if args.write:
        write_section("Sync", body)


if __name__ == "__main__":
    main()
