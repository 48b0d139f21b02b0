"""Benchmark: four operations that grew with the square of their input, n against 4n (issue 44 item 6).

Run on demand: ``.venv/bin/python bench/linear.py [REPEAT] [--three]`` (7 repetitions by default).
Nothing here is asserted; machines are noisy, so read the ratios. Each case runs at size n and at size 4n, the two sizes
interleaved within each repetition (``bench/_timing.py``), timed in CPU time (``time.thread_time``);
the ratio 4n / n is taken within a repetition and shown as a median with the min-max range. The
goal for each is at most 4.4x (linear, with a tenth of slack).

- scenario replay: ``compare()`` of a generated scenario (``bench/replay.py``'s, every built-in
  trinket fed) of 150 and 600 turns: the replay, its history and the cache simulation of every turn
  (whose requests hold the whole conversation so far);
- mirroring n stored sections: ``mirror_stored_sections`` of a fresh session over 1,000 and 4,000
  stored sections;
- ``summary()`` of an imported Claude Code transcript (``wm_kernel.testing.synthetic``) of 60 and
  240 user prompts (about 180 and 720 requests, each repeating the conversation before it);
- tap pairing: ``pair()`` of 1,000 and 4,000 MIRA tap requests of one model, half of them never
  answered (the calls that stay open are what each later record looked through).

``--three`` also times the replay of three 3,000-turn scenarios once (the issue's 3 x 3,000 turns:
104 s before, 17 s in round 4).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trinkets.stored_section import mirror_stored_sections  # noqa: E402
from wm_kernel.core.clock import ManualClock  # noqa: E402
from wm_kernel.experiments import compare  # noqa: E402
from wm_kernel.interop import import_log  # noqa: E402
from wm_kernel.interop.mira.pairing import Record, pair  # noqa: E402
from wm_kernel.session import Session  # noqa: E402
from wm_kernel.testing.synthetic import claude_code_session  # noqa: E402
from wm_kernel.tokens import TokenCounter  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleave, ratios, spread  # noqa: E402
from replay import build_scenario  # noqa: E402

START = "2026-11-30T09:00:00+00:00"


def replay_case(turns: int) -> Callable[[], object]:
    scenario = build_scenario(turns)
    counter = TokenCounter()  # shared, as the CLI shares one: each text is tokenized once
    return lambda: compare(scenario, {"recorded": None}, counter=counter)


def mirror_case(sections: int) -> Callable[[], object]:
    def run() -> object:
        # the session is made inside the timed call (a mirror adds to it once); its cost is linear
        session = Session(base_prompt="Hi.", trinkets=[], clock=ManualClock(START))
        for i in range(sections):
            session.store.hset(
                "trinkets:notebook",
                f"section_{i}",
                {"content": f"<s>{i}</s>", "cache_policy": False, "updated_at": START},
            )
        return mirror_stored_sections(session)

    return run


def summary_case(prompts: int, folder: Path) -> Callable[[], object]:
    path = folder / f"session-{prompts}.jsonl"
    claude_code_session(path, turns=prompts)
    # a fresh import each time: summary() keeps what it built on the imported session
    return lambda: import_log(path).summary()


def pairing_case(requests: int) -> Callable[[], object]:
    asked: list[Record] = []
    answers: list[Record] = []
    for i in range(requests):
        body = {"messages": [{"role": "user", "content": f"question {i} " + "word " * (i % 7)}]}
        value = {"provider": "anthropic", "model": "claude-opus-4-6", "body": body}
        asked.append(Record(i + 1, "", value, float(i)))
        if i % 2 == 0:  # every other call is never answered
            usage = {"input_tokens": 5 + i % 7}
            response = {"provider": "anthropic", "model": "claude-opus-4-6", "response": {"usage": usage}}
            answers.append(Record(i // 2 + 1, "", response, i + 0.5))
    counter = TokenCounter()
    return lambda: pair(asked, answers, counter)


def main(repeat: int = 7, three: bool = False) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases: dict[str, tuple[str, Callable[[int], Callable[[], object]], int, str]] = {
            "replay": ("scenario replay (compare(), turns)", replay_case, 150, "turns"),
            "mirror": ("mirroring n stored sections", mirror_case, 1000, "sections"),
            "summary": ("summary() of a transcript (user prompts)", lambda n: summary_case(n, folder), 60, "prompts"),
            "pairing": ("tap pairing, half unanswered (requests)", pairing_case, 1000, "requests"),
        }
        timed: dict[str, Callable[[], object]] = {}
        for key, (_, make, n, _) in cases.items():
            timed[f"{key}:n"] = make(n)
            timed[f"{key}:4n"] = make(4 * n)
        for run in timed.values():  # once each before timing: imports, caches, the tokenizer
            run()
        samples = interleave(timed, repeat=repeat, batch=1)
        print(
            f"{repeat} interleaved repetitions, CPU time (thread_time); ratio 4n / n within a repetition: "
            f"median (min-max); goal <= 4.4x"
        )
        for key, (label, _, n, _unit) in cases.items():
            small, big = samples[f"{key}:n"], samples[f"{key}:4n"]
            print(
                f"{label:<42} n={n:<5} {spread([s / 1e3 for s in small], ' ms'):>26}  "
                f"4n={4 * n:<5} {spread([b / 1e3 for b in big], ' ms'):>28}  "
                f"{spread(ratios(big, small), 'x', 2):>22}"
            )
    if three:
        scenario = build_scenario(3000)
        scenarios: dict[str, Any] = {"a": scenario, "b": scenario, "c": scenario}
        start = time.thread_time()
        compare(scenarios, {"recorded": None}, counter=TokenCounter())
        print(f"3 x 3,000 turns (compare of three scenarios, here): {time.thread_time() - start:.1f} s CPU")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(int(args[0]) if args else 7, "--three" in sys.argv)
