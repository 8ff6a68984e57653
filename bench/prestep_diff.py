"""Before/after runs of ``bench.prestep``'s steps on one database, for a change that
must not alter what is injected: CPU per step, the evidence section's own-words check's
CPU, and the injected messages dumped for a byte comparison.

    python -m bench.prestep_diff build --size 100000 --root /tmp/pd
    PYTHONPATH=<checkout> python -m bench.prestep_diff run --size 100000 --root /tmp/pd --tag T

Each run works on a fresh copy of the built database (a step writes the assembly log)
and writes ``texts-T-SIZE.json`` under the root. Run the checkouts alternately and
``cmp`` their dumps; the machine's load moves every figure, so compare ratios.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

from bench import prestep
from memplug.assemble.sections.evidence import EvidenceSections
from memplug.memory import Memory
from memplug.models import Message
from memplug.plugin import Plugin


def run(root: Path, size: int, tag: str, steps: int) -> dict[str, Any]:
    work = root / f"run-{tag}-{size}"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(root / f"prestep-{size}", work)
    spent = [0.0]
    checked = EvidenceSections._own_words

    def timed(self: EvidenceSections, *args: Any) -> str:
        start = time.process_time()
        try:
            return checked(self, *args)
        finally:
            spent[0] += time.process_time() - start

    EvidenceSections._own_words = timed  # type: ignore[method-assign]
    plugin = Plugin(Memory.open(work / "memory.sqlite"))
    try:
        sessions = plugin.memory.store.events.session_ids()
        contexts = {}
        for session in sessions:
            after = prestep._last_seq(plugin, session) - 20
            rows = plugin.memory.store.events.session_events(session, after_seq=after)
            contexts[session] = [Message(role=r.role or "user", text=r.text) for r in rows]
        cpu, texts = [], []
        for i, query in enumerate(prestep.queries(steps)):
            session = sessions[i % len(sessions)]
            start = time.process_time()
            injection = plugin.pre_step(
                {"session_id": session, "query": query, "messages": contexts[session]}
            )
            cpu.append((time.process_time() - start) * 1000)
            texts.append(injection.text if injection else None)
    finally:
        plugin.close()
        EvidenceSections._own_words = checked  # type: ignore[method-assign]
    (root / f"texts-{tag}-{size}.json").write_text(json.dumps(texts, ensure_ascii=False))
    ordered = sorted(cpu)
    return {
        "tag": tag,
        "size": size,
        "cpu_p50": round(ordered[len(ordered) // 2], 2),
        "cpu_p95": round(ordered[int(len(ordered) * 0.95)], 2),
        "own_words_cpu_per_step": round(spent[0] * 1000 / steps, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("action", choices=["build", "run"])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--tag", default="run")
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    args.root.mkdir(parents=True, exist_ok=True)
    if args.action == "build":
        path, seconds, _ = prestep.build(args.root, args.size)
        print(f"built {path} in {seconds:.0f} s")
    else:
        print(json.dumps(run(args.root, args.size, args.tag, args.steps)))


if __name__ == "__main__":
    main()
