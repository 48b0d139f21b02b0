"""Benchmark: a compose over a deployment's sections, read through a read-only ValkeyStore, as the
sections stored for the user grow (issue 25, item 14).

Run on demand: ``.venv/bin/python bench/valkey_sections.py [--n 250] [--reps 7]``. Needs the
``valkey`` client and a ``valkey-server`` or ``redis-server`` binary (it starts its own server on a
free loopback port in a temporary folder). Nothing is asserted; read the ratios.

Two users are stored on the server, one with n sections in ``trinkets:{user}`` and one with 4n; a
read-only Session per user mirrors every section (one StoredSection each, re-read at every
compose) and has composed once, so its own writes of the composed sections are already in its
local layer. Each repetition composes both sessions once, alternating them (``time.thread_time``:
this process's CPU, not the server's nor the wait on the socket). The line printed is the cost per
section at n and at 4n (median and min-max over the repetitions) and their ratio: 1.0 means a
compose costs the same per section however many are stored (linear); 4.0 means each section's read
costs as much as all of them (quadratic).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from _timing import interleave, ratios, spread  # noqa: E402
from valkey_server import LocalServer, server_binary  # noqa: E402

from trinkets.stored_section import mirror_stored_sections  # noqa: E402
from wm_kernel.core.clock import ManualClock  # noqa: E402
from wm_kernel.core.composer import StragglerSectionWarning  # noqa: E402
from wm_kernel.session import Session  # noqa: E402
from wm_kernel.stores.valkey import ValkeyStore  # noqa: E402


def store_sections(url: str, user: str, n: int) -> None:
    import valkey

    client = valkey.Valkey.from_url(url, decode_responses=True)
    client.hset(
        f"trinkets:{user}",
        mapping={
            f"section_{i:05d}": json.dumps(
                {
                    "content": f"<s{i}>Section {i} of the deployment.</s{i}>",
                    "cache_policy": i % 2 == 0,
                    "updated_at": "2026-11-30T09:00:00+00:00",
                }
            )
            for i in range(n)
        },
    )
    client.close()


def mirrored_session(url: str, user: str) -> Session:
    s = Session(
        base_prompt="You help.",
        store=ValkeyStore(url, read_only=True),
        user_id=user,
        trinkets=[],
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        instruments=(),
    )
    mirror_stored_sections(s)
    s.compose()  # its own section writes now sit in the local layer, as in a live notebook
    return s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=250, help="sections at 1x (default 250)")
    parser.add_argument("--reps", type=int, default=7, help="repetitions (default 7)")
    args = parser.parse_args()
    # the mirrored sections are not in the layout: each compose appends them, and says so
    warnings.simplefilter("ignore", StragglerSectionWarning)
    binary = server_binary()
    if binary is None:
        sys.exit("no valkey-server or redis-server on PATH")
    with tempfile.TemporaryDirectory() as folder:
        server = LocalServer(binary, Path(folder))
        server.start()
        try:
            sizes = {"1x": args.n, "4x": 4 * args.n}
            sessions = {}
            for name, n in sizes.items():
                store_sections(server.url, f"user-{name}", n)
                sessions[name] = mirrored_session(server.url, f"user-{name}")
            samples = interleave({name: s.compose for name, s in sessions.items()}, repeat=args.reps, batch=1)
        finally:
            server.stop()
    per_section = {name: [t / sizes[name] for t in samples[name]] for name in sizes}
    print(
        f"compose of a read-only ValkeyStore session, per mirrored section "
        f"(n={args.n}, {args.reps} repetitions, CPU time):"
    )
    for name in sizes:
        print(
            f"  {name} ({sizes[name]:>5} sections): {spread(per_section[name], ' us')} per section, "
            f"{statistics.median(samples[name]) / 1e3:.1f} ms per compose"
        )
    print(f"  ratio 4x/1x per section: {spread(ratios(per_section['4x'], per_section['1x']), 'x', 2)}")


if __name__ == "__main__":
    main()
