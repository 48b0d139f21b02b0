"""Write notebooks/recordings/10_sends.jsonl, 10_ask.jsonl and 10_usage.jsonl, the files notebook
10 replays.

The sends are a support conversation; each exchange's usage is what the cache simulation predicts
for it (so the notebook's first reconciliation matches). The usage log repeats those requests and
responses with one injected difference per cause (see CAUSES below), as a proxy would have logged
them. Both recordings are in the current format: each send keeps the digests of the prompt it
answered, so a replay against another prompt is refused. 10_ask.jsonl holds the first two sends as
the notebook's ``%ask`` cells make them, from the magics' own session (ASK_SESSION). Deterministic:
run it again and the files do not change.

Usage: ``PYTHONPATH=. python tools/make_recording_10.py``; with ``--digests-only`` the shipped
sends are kept as they are (the replies and usage the notebook's figures come from) and only the
prompt digests are written again, from a replay (10_usage.jsonl is left alone).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wm_kernel.core.clock import ManualClock
from wm_kernel.core.profile import Profile
from wm_kernel.instruments.exchange import Exchange
from wm_kernel.providers.reconcile import reconcile
from wm_kernel.providers.recording import Recording, section_digests
from wm_kernel.providers.send import send
from wm_kernel.session import Session

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "notebooks" / "recordings"
MODEL = "claude-sonnet-4-6"
POLICY = "You are the support assistant of Lumen & Co., a lamp shop. Be brief and kind. " + " ".join(
    f"Policy {n}: replacements ship within {n + 2} working days; refunds need the order number." for n in range(60)
)
SENDS = [
    ("Hi, my floor lamp arrived with a cracked shade.", "I'm sorry, Ada. Could you send me the order number?"),
    ("It's LC-20931.", "Thank you. A replacement shade for order LC-20931 ships within 2 working days."),
    ("Can I keep the cracked one?", "Yes, please keep it or recycle it; there is nothing to return."),
    ("Will the new shade fit the old base?", "Yes: the replacement is the same model, it fits the base."),
    ("How will I know it shipped?", "You'll get an email with the tracking number once it leaves."),
    ("And if it breaks again?", "Write to us with a photo and we will send another at no cost."),
    ("Great, thanks!", "You're welcome, Ada. Enjoy the lamp!"),
    ("One more: do you sell bulbs?", "We do: E27 LED bulbs, warm white, in packs of two."),
]


def session() -> Session:
    """The notebook's session (the same arguments)."""
    return Session(
        base_prompt=POLICY,
        profile=Profile(first_name="Ada", timezone="Europe/London"),
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
    )


def run(recording: Recording) -> Session:
    s = session()
    for user, _ in SENDS:
        send(s, None, model=MODEL, user=user, recording=recording)
        s.clock.advance(minutes=2)
    return s


def usage_record(row: Any) -> dict[str, Any]:
    return {
        "input_tokens": int(row.predicted_input),
        "cache_creation_input_tokens": int(row.predicted_write),
        "cache_read_input_tokens": int(row.predicted_read),
        "output_tokens": 24,
        "cache_creation": {
            "ephemeral_5m_input_tokens": int(row.predicted_write - row.predicted_write_1h),
            "ephemeral_1h_input_tokens": int(row.predicted_write_1h),
        },
    }


def main() -> None:
    placeholder = {"input_tokens": 0, "output_tokens": 0}
    draft = Recording(
        Exchange(
            turn=n, provider="anthropic", model=MODEL, user=u, reply=r, usage=placeholder, request_id=f"req_{n:02d}"
        )
        for n, (u, r) in enumerate(SENDS)
    )
    s = run(draft)
    rows = list(reconcile(s, model=MODEL, usage=[placeholder] * len(SENDS)).rows.itertuples())
    final = Recording()
    for n, ((u, r), row) in enumerate(zip(SENDS, rows, strict=True)):
        exchange = Exchange(
            turn=n,
            provider="anthropic",
            model=MODEL,
            user=u,
            reply=r,
            usage=usage_record(row),
            request_id=f"req_{n:02d}",
            stop_reason="end_turn",
        )
        final.append(exchange, section_digests(s.prompt_at(n)))
    OUT.mkdir(exist_ok=True)
    final.save(OUT / "10_sends.jsonl")
    s = run(Recording.load(OUT / "10_sends.jsonl"))  # replayed with the prompt check: the same prompts
    write_ask_recording(final.exchanges[:2])
    lines = []
    for n, row in enumerate(rows):
        usage = usage_record(row)
        conversation = s.recorder.conversation(before=n) + [{"role": "user", "content": SENDS[n][0]}]
        request = s.prompt_at(n).to_anthropic(history=conversation, model=MODEL, max_tokens=1024)
        if n == 0:  # ttl_priced: the first write billed at the 1-hour price
            usage["cache_creation"] = {
                "ephemeral_5m_input_tokens": 0,
                "ephemeral_1h_input_tokens": usage["cache_creation_input_tokens"],
            }
        elif n == 3:  # provider_miss: the same prefix, live, yet written again
            usage["cache_creation_input_tokens"], usage["cache_read_input_tokens"] = usage["cache_read_input_tokens"], 0
            usage["cache_creation"]["ephemeral_5m_input_tokens"] = usage["cache_creation_input_tokens"]
        elif n == 4:  # unknown: 37 more plain input tokens, in no pattern
            usage["input_tokens"] += 37
        elif n == 5:  # invalidated: a timestamp leaked into the cached system text
            request["system"][0]["text"] = "Now: 2026-11-30T09:10:00Z. " + request["system"][0]["text"]
            usage["cache_creation_input_tokens"], usage["cache_read_input_tokens"] = usage["cache_read_input_tokens"], 0
            usage["cache_creation"]["ephemeral_5m_input_tokens"] = usage["cache_creation_input_tokens"]
        elif n in (6, 7):  # tokenizer: the provider counts 1.3 tokens for each one simulated
            for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
                usage[key] = round(usage[key] * 1.3)
            usage["cache_creation"]["ephemeral_5m_input_tokens"] = usage["cache_creation_input_tokens"]
        response = {
            "id": f"msg_{n:02d}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [{"type": "text", "text": SENDS[n][1]}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        lines.append(
            json.dumps(
                {"request_id": f"req_{n:02d}", "request": request, "response": response},
                ensure_ascii=False,
                sort_keys=True,
            )
        )
    (OUT / "10_usage.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


#: The notebook's %wm_session line before its %ask cells (the magics' session: no policy text).
ASK_SESSION = "--clock 2026-11-30T09:00:00+00:00 --first-name Ada --timezone Europe/London --model " + MODEL


def write_ask_recording(exchanges: list[Exchange]) -> None:
    """10_ask.jsonl: ``exchanges`` as the notebook's ``%ask`` cells send them, with the digests of
    the magics' session's prompts; then replayed through ``%ask --recording``, checked."""
    from IPython.core.interactiveshell import InteractiveShell

    from wm_kernel.jupyter.magics.ask import set_ask_client
    from wm_kernel.session import current_session

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "wm_kernel")
    shell.run_line_magic("wm_session", ASK_SESSION)
    set_ask_client(None, recording=Recording(exchanges))  # no digests yet: answered unchecked
    for exchange in exchanges:
        shell.run_line_magic("ask", f"--no-stream {exchange.user}")
    session = current_session()
    recording = Recording()
    for n, exchange in enumerate(exchanges):
        recording.append(exchange, section_digests(session.prompt_at(n)))
    recording.save(OUT / "10_ask.jsonl")
    set_ask_client(None)
    shell.run_line_magic("wm_session", ASK_SESSION)
    for exchange in exchanges:  # a UsageError here: the digests do not match the cells' prompts
        shell.run_line_magic("ask", f"--recording {OUT / '10_ask.jsonl'} --no-stream {exchange.user}")


def digests_only() -> None:
    """Rewrite 10_sends.jsonl and 10_ask.jsonl in the current format, the exchanges unchanged."""
    shipped = Recording.load(OUT / "10_sends.jsonl")
    s = run(Recording(shipped.exchanges))  # answered unchecked: the prompts are what is recorded now
    upgraded = Recording()
    for n, exchange in enumerate(shipped.exchanges):
        upgraded.append(exchange, section_digests(s.prompt_at(n)))
    upgraded.save(OUT / "10_sends.jsonl")
    run(Recording.load(OUT / "10_sends.jsonl"))  # replayed with the prompt check
    write_ask_recording(shipped.exchanges[:2])


if __name__ == "__main__":
    import sys

    digests_only() if sys.argv[1:] == ["--digests-only"] else main()
