"""EmailTrinket: the unread emails MIRA's inbox poller last saw, in the notification centre (MIRA HEAD).

MIRA's InboxPollerService sends the whole unread snapshot (at most 20) with
``wm.publish_trinket_update("EmailTrinket", {"data": [{uid, from_addr, subject, date}, ...]})``: a
``data`` that is not None replaces the snapshot (``[]`` empties it); a context without ``data``
changes nothing. Turns change nothing; a segment collapse empties it. With no email there is no
section. Otherwise ``inbox_status``::

    <inbox_status>
    <instruction>You have unread emails. ...</instruction>
    <unread count="2">
    <email uid="INBOX:1" from="Ada &lt;ada@example.org&gt;" subject="Tides" date="Mon, 30 Nov 2026"/>
    <email uid="INBOX:2" from="..." subject="..." date="..."/>
    </unread>
    </inbox_status>

Escaping (docs/deviations.md, ``email_attr_escape_full``): MIRA escapes ``& " < >`` in the four
attributes; here they go through :func:`~wm_kernel.utils.markup.escape_attr`, which also writes
``'``, line feed, carriage return and tab as references (a folded header keeps its line break for
an XML reader) and replaces characters XML cannot carry. Headers without those are MIRA's bytes.

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.session import Session
>>> s = Session(trinkets=[EmailTrinket], clock=ManualClock("2026-11-30T09:00:00+00:00"))
>>> s.trinket("EmailTrinket").set_unread([{"uid": "INBOX:7", "from_addr": "Ada <ada@example.org>",
...     "subject": "Tides & moons", "date": "Mon, 30 Nov 2026 08:10:00 +0000"}])
>>> print(s.trinket("EmailTrinket").generate_content({}).splitlines()[3])
<email uid="INBOX:7" from="Ada &lt;ada@example.org&gt;" subject="Tides &amp; moons" date="Mon, 30 Nov 2026 08:10:00 +0000"/>
"""  # noqa: E501 - examples show their output line for line

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from traitlets import List

from trinkets.base import StatefulTrinket, arg, command, feed
from wm_kernel.core.events import UpdateTrinketEvent
from wm_kernel.utils.markup import escape_attr

INSTRUCTION = (
    "You have unread emails. Mention them to the user when the conversation permits — they cannot see "
    "this data unless you surface it. If they don't act, these will continue appearing."
)
FIELDS: tuple[str, ...] = ("uid", "from_addr", "subject", "date")


def _email(item: object, where: str) -> dict[str, Any]:
    if not isinstance(item, Mapping):
        raise ValueError(f"{where} must be a mapping of uid, from_addr, subject, date; got {type(item).__name__}")
    return dict(item)


class EmailTrinket(StatefulTrinket):
    """The unread-email snapshot, published as ``inbox_status`` (not cached).

    See the module docstring for the feeding and the markup.
    """

    variable_name = "inbox_status"
    cache_policy = False
    default_priority = 50
    reuse_content = True
    state_prefix = "email"

    unread: List[dict[str, Any]] = List(
        read_only=True,
        help="The last snapshot of unread emails, in the poller's order: dicts of uid, from_addr, "
        "subject, date (replaced, never mutated, on every change).",
    )

    @feed
    def set_unread(self, emails: Sequence[Mapping[str, Any]]) -> None:
        """Replace the snapshot (what a context ``{"data": emails}`` does); ``[]`` empties it."""
        self._replace(emails)

    def _replace(self, emails: object) -> None:
        if isinstance(emails, (str, bytes)) or not isinstance(emails, Sequence):
            raise TypeError(f"emails must be a list of mappings, got {type(emails).__name__}")
        snapshot = [_email(e, f"emails[{i}]") for i, e in enumerate(emails)]
        self.set_trait("unread", snapshot)
        self._save_state()

    @command(
        "add",
        arg("uid", help="The message's uid (e.g. INBOX:123)."),
        arg("--from", dest="from_addr", default="", help="The From header."),
        arg("--subject", default=""),
        arg("--date", default=""),
        help="Add one unread email to the snapshot: UID [--from F] [--subject S] [--date D].",
    )
    def _add_command(self, uid: str, from_addr: str, subject: str, date: str) -> None:
        email = {"uid": uid, "from_addr": from_addr, "subject": subject, "date": date}
        self.working_memory.publish_trinket_update(self.name, {"data": [*self.unread, email]})

    @command("clear", help="Empty the snapshot (the poller found nothing unread).")
    def _clear_command(self) -> None:
        self.working_memory.publish_trinket_update(self.name, {"data": []})

    def handle_update_trinket(self, event: UpdateTrinketEvent) -> None:
        """Take the context's ``data`` as the new snapshot (when it is not None), then regenerate."""
        data = event.context.get("data")
        if data is not None:
            self.set_unread(data)  # a feed: a scenario recorder hears the poller's snapshot
        super().handle_update_trinket(event)

    def describe_items(self) -> list[dict[str, Any]]:
        return [
            {"id": str(e.get("uid", "")), "label": f"{e.get('from_addr', '')}: {e.get('subject', '')}",
             "turns_remaining": None}
            for e in self.unread
        ]  # fmt: skip

    def generate_content(self, context: dict[str, Any]) -> str:
        if not self.unread:
            return ""
        lines = ["<inbox_status>", f"<instruction>{INSTRUCTION}</instruction>", f'<unread count="{len(self.unread)}">']
        for e in self.unread:
            attrs = " ".join(
                f'{name}="{escape_attr(e.get(key, ""))}"'
                for name, key in (("uid", "uid"), ("from", "from_addr"), ("subject", "subject"), ("date", "date"))
            )
            lines.append(f"<email {attrs}/>")
        lines += ["</unread>", "</inbox_status>"]
        return "\n".join(lines)

    # -- lifecycle: nothing expires by turn; a collapse empties the snapshot
    def _expire_items(self) -> bool:
        return False

    def _clear_all_state(self) -> None:
        if self.unread:
            self.set_trait("unread", [])
        self._save_state(None)

    # -- persistence: the whole snapshot, field ``state`` of ``email:{user_id}:{continuum_id}``
    def _dump_state(self) -> dict[str, Any] | None:
        return {"emails": [dict(e) for e in self.unread]} if self.unread else None

    def _parse_state(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        emails = data.get("emails")
        if set(data) != {"emails"} or not isinstance(emails, list):
            raise ValueError("expected {'emails': [...]}")
        return [_email(e, f"emails[{i}]") for i, e in enumerate(emails)]

    def _restore_state(self, parsed: list[dict[str, Any]]) -> None:
        self.set_trait("unread", parsed)
