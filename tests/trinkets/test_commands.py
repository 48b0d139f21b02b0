"""The ``%trinket`` commands a trinket declares (trinkets/commands.py), without IPython."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from argparse_words import invalid_choice

from trinkets.base import CommandError, EventAwareTrinket, arg, command, feed, instant_or_offset, non_negative_int
from trinkets.peanutgallery_trinket import PeanutGalleryTrinket
from wm_kernel.session import Session


class Lamp(EventAwareTrinket):
    variable_name = "lamp"
    styles = ("original", "dim")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[dict[str, Any]] = []

    @command("on", help="Light it.", fixed={"lit": True})
    @command("off", help="Put it out.", fixed={"lit": False})
    @feed
    def switch(self, lit: bool, note: str = "") -> bool:
        self.calls.append({"lit": lit, "note": note})
        return lit

    @command(
        "say",
        arg("note", words=True, default="", help="Words (may be none)."),
        arg("--loud", action="store_true", help="Shout."),
        help="Say something.",
    )
    def _say(self, note: str, loud: bool) -> str:
        return note.upper() if loud else note

    def generate_content(self, context: dict[str, Any]) -> str:
        return "lamp"


class Spotlight(Lamp):
    @command("say", arg("--twice", action="store_true"), help="Say it twice.")
    def _say_twice(self, twice: bool) -> str:
        return "hi hi" if twice else "hi"


class Scribe(Lamp):
    @command("write", arg("text", words=True, help="What to write."), help="Write it down.")
    def _write(self, text: str) -> str:
        return text


@pytest.mark.parametrize("words", [[], [""], ["  ", " "]])
def test_required_text_is_refused_empty_naming_the_argument(words: list[str]) -> None:
    scribe = Session(trinkets=[Scribe]).trinket("Scribe")
    with pytest.raises(CommandError) as caught:
        Scribe.commands()["write"].run(scribe, words)
    assert str(caught.value) == "argument text: must not be empty"
    assert Scribe.commands()["write"].run(scribe, ["a", "b"]) == "a b"


def test_base_commands_come_first_then_the_classes_in_the_order_written() -> None:
    assert list(Lamp.commands()) == ["enable", "disable", "show", "cap", "refresh", "style", "on", "off", "say"]
    # a subclass's command of the same name replaces its base's, in the base's place
    assert list(Spotlight.commands()) == list(Lamp.commands())
    assert Spotlight.commands()["say"].help == "Say it twice."


def test_run_calls_the_method_with_parsed_and_fixed_arguments() -> None:
    session = Session(trinkets=[Lamp])
    lamp = session.trinket("Lamp")
    assert isinstance(lamp, Lamp)
    commands = Lamp.commands()
    assert commands["off"].run(lamp, []) is False
    assert lamp.calls == [{"lit": False, "note": ""}]
    assert commands["say"].run(lamp, ["hello", "there", "--loud"]) == "HELLO THERE"
    assert commands["say"].run(lamp, []) == ""
    commands["style"].run(lamp, ["dim"])
    assert lamp.style == "dim"
    commands["disable"].run(lamp, [])
    assert lamp.enabled is False
    fed = [r.event.method for r in session.bus.log if r.event_type == "TrinketFedEvent"]
    assert fed == ["switch", "set_style", "set_enabled"]


@pytest.mark.parametrize(
    ("name", "words", "message"),
    [
        ("style", ["bright"], invalid_choice("style", "bright", ["original", "dim"])),
        ("style", [], "the following arguments are required: style"),
        ("on", ["now"], "unrecognized arguments: now"),
        ("say", ["--quiet"], "unrecognized arguments: --quiet"),
        ("say", ["-h"], "unrecognized arguments: -h"),  # no help action: it would exit the process
    ],
)
def test_a_command_line_argparse_refuses_is_a_command_error_and_nothing_runs(
    name: str, words: list[str], message: str
) -> None:
    session = Session(trinkets=[Lamp])
    lamp = session.trinket("Lamp")
    assert isinstance(lamp, Lamp)
    with pytest.raises(CommandError) as caught:
        Lamp.commands()[name].run(lamp, words)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)
    assert (lamp.calls, lamp.style) == ([], "original")


def test_argument_types_say_what_they_expected() -> None:
    assert non_negative_int("0") == 0
    for bad in ("-1", "1.5", "", "two"):
        with pytest.raises(Exception, match=f"must be a non-negative integer, got {bad!r}"):
            non_negative_int(bad)
    assert str(instant_or_offset("+90m")) == "1:30:00"
    assert instant_or_offset("2026-11-30T09:00:00+01:00").isoformat() == "2026-11-30T09:00:00+01:00"
    with pytest.raises(Exception, match=r"\(or give \+N with m, h, d or w, e.g. \+2h\)$"):
        instant_or_offset("tomorrow")


def test_completion_knows_positions_options_and_choices() -> None:
    session = Session(trinkets=[PeanutGalleryTrinket])
    add = PeanutGalleryTrinket.commands()["add"]
    trinket = session.trinket("PeanutGalleryTrinket")
    assert add.completions(trinket, [""]) == ["concern", "coaching"]
    assert add.completions(trinket, ["concern", "Slow", "-"]) == ["--ttl", "--critical"]
    assert add.completions(trinket, ["concern", "--ttl", ""]) == []  # a number: no candidates
    assert add.completions(trinket, ["--critical", ""]) == ["concern", "coaching"]


def test_declarations_are_checked() -> None:
    with pytest.raises(ValueError, match="a command name is one word, got 'add note'"):
        command("add note", help="x")
    with pytest.raises(TypeError, match="arg\\(\\) needs at least one non-empty name or flag"):
        arg()


@pytest.mark.slow
def test_the_trinkets_import_no_ipython() -> None:
    code = (
        "import sys, trinkets.base, trinkets.commands, trinkets.peanutgallery_trinket; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'IPython'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n"
