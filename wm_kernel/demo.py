"""The headless demo: a Session with every built-in trinket, fed with sample data, over a few turns."""
from __future__ import annotations

from typing import TextIO

from wm_kernel.clock import ManualClock
from wm_kernel.profile import Profile
from wm_kernel.session import Session


def build_demo_session() -> Session:
    """A deterministic Session with sample data in every trinket."""
    clock = ManualClock("2026-11-30T09:05:00+00:00")
    session = Session(
        base_prompt="You are a thoughtful assistant helping {first_name}.{user_context}",
        profile=Profile(first_name="Ada", timezone="Europe/London",
                        user_context="Ada is a mathematician who likes precise answers."),
        clock=clock)
    return session


def run_demo(turns: int = 6, quiet: bool = False, out: TextIO | None = None) -> int:
    import sys

    out = out or sys.stdout
    if turns < 1:
        print("demo: --turns must be at least 1", file=sys.stderr)
        return 2
    session = build_demo_session()
    composed = session.compose()
    if not quiet:
        out.write("=== composed prompt at turn 0 ===\n")
        out.write(render_text(composed) + "\n")
    out.write(f"{'turn':>4}  {'sections':>8}  {'chars':>6}  expired\n")
    for _ in range(turns):
        expired = session.advance_turn()
        composed = session.composed
        chars = sum(r.chars for r in composed.sections)
        gone = ", ".join(f"{e['trinket']}:{e['label']}" for e in expired) or "-"
        out.write(f"{session.turn:>4}  {len(composed.sections):>8}  {chars:>6}  {gone}\n")
    if not quiet:
        out.write(f"=== composed prompt at turn {session.turn} ===\n")
        out.write(render_text(session.composed) + "\n")
    return 0


def render_text(composed) -> str:
    parts = [f"--- system (cached) ---\n{composed['cached_content']}",
             f"--- system (not cached) ---\n{composed['non_cached_content']}"]
    for i, item in enumerate(composed["conversation_prefix_items"], 1):
        parts.append(f"--- conversation prefix {i} ---\n{item}")
    for i, item in enumerate(composed["post_history_items"], 1):
        parts.append(f"--- post-history {i} ---\n{item}")
    parts.append(f"--- notification centre ---\n{composed['notification_center']}")
    return "\n".join(parts)
