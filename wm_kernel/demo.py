"""The headless demo: a Session with every built-in trinket, fed with sample data, over a few turns.

``python -m wm_kernel demo`` prints the composed prompt at turn 0, a per-turn summary (sections,
characters, what expired), and the prompt at the last turn. Everything runs on a ManualClock, so the
output is the same on every run. :func:`feed_sample_data` is reused by benchmarks and notebooks.
"""

from __future__ import annotations

import sys
from typing import TextIO, TypeVar

from trinkets.base import EventAwareTrinket
from trinkets.domaindoc import DomaindocTrinket
from trinkets.getcontext import GetContextTrinket
from trinkets.lora_trinket import LoraTrinket
from trinkets.peanutgallery_trinket import PeanutGalleryTrinket
from trinkets.proactive_memory_trinket import ProactiveMemoryTrinket
from trinkets.reminders import ReminderManager
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.profile import Profile
from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.session import Session
from wm_kernel.utils.checks import cli_error

DEMO_START = "2026-11-30T09:05:00+00:00"

USER_MODEL = """<mira:user_model>
<mira:observation section="communication" confidence="high">Prefers short answers with the reasoning shown.</mira:observation>
<mira:observation section="work" confidence="medium">Works on numerical methods; checks every derivation.</mira:observation>
<mira:checkin><mira:topic section="communication" reason="Asked twice for more detail this week."/></mira:checkin>
</mira:user_model>"""  # noqa: E501 - examples show their output line for line


def build_demo_session() -> Session:
    """A deterministic Session (ManualClock, Europe/London) with every built-in trinket."""
    return Session(
        base_prompt="You are a thoughtful assistant helping {first_name}.{user_context}",
        profile=Profile(
            first_name="Ada",
            timezone="Europe/London",
            user_context="Ada is a mathematician who likes precise answers.",
            account_created="2026-05-30T09:00:00+00:00",
        ),
        clock=ManualClock(DEMO_START),
        continuum_id="demo",
    )


T = TypeVar("T", bound=EventAwareTrinket)


def _registered(session: Session, cls: type[T]) -> T | None:
    """The session's trinket registered under ``cls``'s name, if it is one of ``cls``."""
    trinket = session.trinkets.get(cls.__name__)
    return trinket if isinstance(trinket, cls) else None


def feed_sample_data(session: Session) -> None:
    """Give every built-in trinket something to show (skips trinkets the session lacks)."""
    if (lora := _registered(session, LoraTrinket)) is not None:
        lora.set_user_model(USER_MODEL)
        lora.set_checkin_due(True)
    if (reminders := _registered(session, ReminderManager)) is not None:
        reminders.add_reminder(
            "Send the referee report",
            "2026-11-30T08:30:00+00:00",
            details="Journal of Numerical Analysis, manuscript 1187",
        )
        reminders.add_reminder("Call the bank", "2026-11-30T16:00:00+00:00")
        reminders.add_reminder("Re-run the nightly evaluation", "2026-11-30T11:00:00+00:00", category="internal")
    if (memory := _registered(session, ProactiveMemoryTrinket)) is not None:
        memory.surface(
            [
                {
                    "id": "5c1d8e2f-0a4b-4c3d-9e8f-1234567890ab",
                    "text": "Ada is preparing a talk on Runge-Kutta stability for 12 December",
                    "created_at": "2026-11-23T10:00:00+00:00",
                    "similarity_score": 0.88,
                    "happens_at": "2026-12-12T14:00:00+00:00",
                },
                {
                    "id": "9e8f7a6b-1111-2222-3333-444455556666",
                    "text": "Ada writes her notes in LaTeX",
                    "created_at": "2026-09-01T10:00:00+00:00",
                    "similarity_score": 0.62,
                    "is_global": True,
                },
            ]
        )
    if (search := _registered(session, GetContextTrinket)) is not None:
        search.add_success(
            "task-1",
            "Runge-Kutta stability regions",
            "Explicit RK methods have bounded stability regions; implicit ones can be A-stable.",
            key_findings=[
                {"point": "RK4 is stable on the negative real axis down to about -2.78", "source": "Hairer & Wanner"},
                {"point": "No explicit RK method is A-stable"},
            ],
            limitations="Textbook sources only",
        )
        search.add_failed("task-2", "Ada's calendar for December", "calendar service unreachable", "ConnectionError")
    if (gallery := _registered(session, PeanutGalleryTrinket)) is not None:
        gallery.add_guidance(
            "concern", "You have answered three questions without checking the units; check them.", ttl=2
        )
        gallery.add_guidance("coaching", "Offer a worked example before the general rule.", ttl=4)
    if (docs := _registered(session, DomaindocTrinket)) is not None:
        docs.create_document("talk", "Runge-Kutta talk", "Outline of the 12 December talk")
        docs.add_section(
            "talk", "intro", "Introduction", "Why stability matters for stiff problems.", summary="Motivation"
        )
        docs.add_section("talk", "methods", "Methods", "Explicit and implicit schemes.", summary="The schemes compared")
        docs.add_section(
            "talk", "rk4", "RK4", "The classical fourth-order method.", parent="methods", summary="The classical method"
        )
        docs.collapse_section("talk", "methods")


def run_demo(turns: int = 6, quiet: bool = False, out: TextIO | None = None) -> int:
    """Compose, advance ``turns`` turns, and print the prompts and a per-turn summary."""
    out = out or sys.stdout
    if turns < 1:
        print(cli_error("demo", "--turns must be at least 1"), file=sys.stderr)
        return 2
    session = build_demo_session()
    clock = session.clock
    assert isinstance(clock, ManualClock)  # build_demo_session makes one
    feed_sample_data(session)
    composed = session.compose()
    if not quiet:
        out.write("=== composed prompt at turn 0 ===\n")
        out.write(render_text(composed) + "\n\n")
    out.write(f"{'turn':>4}  {'sections':>8}  {'chars':>6}  expired\n")
    out.write(f"{0:>4}  {len(composed.sections):>8}  {sum(r.chars for r in composed.sections):>6}  -\n")
    for _ in range(turns):
        clock.advance(minutes=3)
        expired = session.advance_turn()
        latest = session.composed
        assert latest is not None  # auto_compose is on: every turn composes
        composed = latest
        gone = "; ".join(f"{e['trinket']}: {e['label']}" for e in expired) or "-"
        out.write(
            f"{session.turn:>4}  {len(composed.sections):>8}  {sum(r.chars for r in composed.sections):>6}  {gone}\n"
        )
    if not quiet:
        out.write(f"\n=== composed prompt at turn {session.turn} ===\n")
        out.write(render_text(composed) + "\n")
    return 0


def render_text(composed: ComposedPrompt) -> str:
    """The five parts of a composed prompt as labelled plain text."""
    parts = [
        f"--- system (cached) ---\n{composed['cached_content']}",
        f"--- system (not cached) ---\n{composed['non_cached_content']}",
    ]
    for i, item in enumerate(composed["conversation_prefix_items"], 1):
        parts.append(f"--- conversation prefix {i} ---\n{item}")
    for i, item in enumerate(composed["post_history_items"], 1):
        parts.append(f"--- post-history {i} ---\n{item}")
    parts.append(f"--- notification centre ---\n{composed['notification_center']}")
    return "\n".join(parts)
