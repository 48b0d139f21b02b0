"""reconcile(): zero residual against itself, and each injected perturbation gets its cause."""

from __future__ import annotations

import json
from typing import Any

import pytest

from wm_kernel.cachesim.simulation import Simulation
from wm_kernel.core.clock import ManualClock
from wm_kernel.providers import read_usage
from wm_kernel.providers.compared_usage import simulated_usage
from wm_kernel.providers.reconcile import reconcile
from wm_kernel.providers.reconciliation import COLUMNS
from wm_kernel.session import Session

RULES = "Answer in the customer's language. " * 300


@pytest.fixture
def sent() -> tuple[Session, Simulation]:
    """Five turns two minutes apart, with a cached system prompt of about 2,100 tokens."""
    s = Session(
        base_prompt="You help {first_name}. " + RULES, clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[]
    )
    s.compose()
    for _ in range(4):
        s.clock.advance(minutes=2)
        s.advance_turn()
    return s, s.cache_simulation("claude-sonnet-4-6")


def billed(sim: Simulation) -> list[dict[str, Any]]:
    """The Anthropic usage the simulation predicts, as raw records (with a request body each)."""
    out = []
    for n, row in enumerate(sim.turns.itertuples()):
        usage = {
            "input_tokens": row.input_tokens,
            "cache_read_input_tokens": row.cache_read_input_tokens,
            "cache_creation_input_tokens": row.cache_creation_input_tokens,
            "output_tokens": 20,
            "cache_creation": {
                "ephemeral_5m_input_tokens": row.ephemeral_5m_input_tokens,
                "ephemeral_1h_input_tokens": row.ephemeral_1h_input_tokens,
            },
        }
        request = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 1024,
            "system": [{"type": "text", "text": RULES, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": f"message {n}"}],
        }
        out.append({"request_id": f"req_{n}", "request": request, "response": {"usage": usage}})
    return out


def causes(result: Any) -> list[str]:
    return result.rows["cause"].tolist()


def test_a_simulation_against_its_own_usage_has_zero_residual(sent: tuple[Session, Simulation]) -> None:
    _, sim = sent
    result = reconcile(sim, simulated_usage(sim))
    assert list(result.rows.columns) == COLUMNS
    assert causes(result) == ["match"] * 5
    assert result.rows["residual_usd"].abs().max() == 0.0
    assert result.summary()["residual_usd"] == 0.0
    assert result.summary()["predicted_usd"] == pytest.approx(sim.total_cost)
    assert read_usage([json.dumps(r) for r in billed(sim)])[0].request_id == "req_0"
    assert causes(reconcile(sim, read_usage(billed(sim)))) == ["match"] * 5
    assert result.calibration() is None


def test_a_1h_write_billed_is_ttl_priced(sent: tuple[Session, Simulation]) -> None:
    _, sim = sent
    records = billed(sim)
    usage = records[0]["response"]["usage"]
    usage["cache_creation"] = {
        "ephemeral_5m_input_tokens": 0,
        "ephemeral_1h_input_tokens": usage["cache_creation_input_tokens"],
    }
    result = reconcile(sim, records)
    assert causes(result) == ["ttl_priced", "match", "match", "match", "match"]
    written = usage["cache_creation_input_tokens"]
    assert result.rows.loc[0, "detail"] == f"{written:,} write tokens billed at the 1h price where 5m was modelled"
    assert result.rows.loc[0, "residual_usd"] == pytest.approx(written * (6 - 3.75) / 1e6)


def test_a_timestamp_leaked_into_the_cached_prefix_is_a_changed_prefix(sent: tuple[Session, Simulation]) -> None:
    _, sim = sent
    records = billed(sim)
    usage = records[2]["response"]["usage"]
    usage["cache_creation_input_tokens"], usage["cache_read_input_tokens"] = usage["cache_read_input_tokens"], 0
    usage["cache_creation"]["ephemeral_5m_input_tokens"] = usage["cache_creation_input_tokens"]
    records[2]["request"]["system"][0]["text"] = "It is 09:04:17. " + RULES
    result = reconcile(sim, records)
    assert causes(result) == ["match", "match", "prefix_changed", "match", "match"]
    assert result.rows.loc[2, "detail"] == "cached system text changed since the previous request"


def test_a_write_on_an_identical_live_prefix_is_a_provider_miss(sent: tuple[Session, Simulation]) -> None:
    _, sim = sent
    records = billed(sim)
    usage = records[3]["response"]["usage"]
    read = usage["cache_read_input_tokens"]
    usage["cache_creation_input_tokens"], usage["cache_read_input_tokens"] = read, 0
    usage["cache_creation"]["ephemeral_5m_input_tokens"] = read
    result = reconcile(sim, records)
    assert causes(result) == ["match", "match", "match", "provider_miss", "match"]
    assert result.rows.loc[3, "detail"] == (
        f"prefix byte-identical to the previous request and live ({read:,} tokens modelled as read); billed a write"
    )
    # the same usage with no request to compare: the simulation itself holds the prefix live and
    # identical, so it is still the provider's miss (bodies are more evidence, not a precondition)
    for record in records:
        del record["request"]
    result = reconcile(sim, records)
    assert causes(result)[3] == "provider_miss"
    assert result.rows.loc[3, "detail"] == (
        f"the simulation holds the prefix live and identical ({read:,} tokens modelled as read); billed a read of 0"
    )


def test_a_tokenizer_factor_of_1_3_is_named(sent: tuple[Session, Simulation]) -> None:
    _, sim = sent
    records = billed(sim)
    for record in records:
        usage = record["response"]["usage"]
        for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
            usage[key] = round(usage[key] * 1.3)
        usage["cache_creation"]["ephemeral_5m_input_tokens"] = usage["cache_creation_input_tokens"]
    result = reconcile(sim, records)
    assert causes(result) == ["tokenizer"] * 5
    assert result.rows.loc[0, "detail"] == "counts x1.30 (steady over 5 turns)"
    assert result.factor == pytest.approx(1.3, abs=0.001)
    calibration = result.calibration()
    assert calibration is not None and calibration["model"] == "claude-sonnet-4-6"
    assert calibration["factor"] == pytest.approx(1.3, abs=0.001)
    assert str(result).splitlines()[2] == f"tokenizer factor {result.factor:.3f} (billed / predicted tokens)"


def test_alignment_by_request_id(sent: tuple[Session, Simulation]) -> None:
    _, sim = sent
    records = billed(sim)[::-1]
    result = reconcile(sim, records, by="request_id", request_ids=[f"req_{n}" for n in range(5)])
    assert causes(result) == ["match"] * 5
    with pytest.raises(ValueError, match="^no usage record has request id 'req_x'$"):
        reconcile(sim, records, by="request_id", request_ids=["req_x"] * 5)
    with pytest.raises(ValueError, match="^5 simulated requests but 4 usage records; align by request id"):
        reconcile(sim, records[:4])


def test_a_session_reconciles_its_recorded_turns(sent: tuple[Session, Simulation]) -> None:
    session, sim = sent
    result = reconcile(session, billed(sim), model="claude-sonnet-4-6")
    assert result.rows["turn"].tolist() == [0, 1, 2, 3, 4]
    assert causes(result) == ["match"] * 5
    with pytest.raises(
        ValueError,
        match=r"^pass model= \(the session names no model and sent nothing to take "
        r"it from\)$",
    ):
        reconcile(session, billed(sim))


def test_a_session_with_a_model_that_sent_nothing_needs_no_model_argument(sent: tuple[Session, Simulation]) -> None:
    session, sim = sent
    session.model = "claude-sonnet-4-6"
    result = reconcile(session, billed(sim))
    assert result.profile.name == "claude-sonnet-4-6" and causes(result) == ["match"] * 5


def test_the_shown_table_has_billed_and_predicted_uncached_reads_writes_1h_and_dollars(
    sent: tuple[Session, Simulation],
) -> None:
    _, sim = sent
    records = billed(sim)
    usage = records[1]["response"]["usage"]
    usage["input_tokens"] += 7
    result = reconcile(sim, records)
    pairs = ["uncached", "read", "write", "1h writes", "$"]
    columns = [f"{name} ({side})" for name in pairs[:4] for side in ("sim", "bill")] + ["$ sim", "$ bill"]
    table = result.table()
    assert [c for c in table.columns if c in columns] == columns
    assert table.loc[1, "uncached (bill)"] == table.loc[1, "uncached (sim)"] + 7
    header = str(result).splitlines()[len(result.lines())].split()
    assert header[:12] == [
        "turn",
        "model",
        "uncached",
        "(sim)",
        "uncached",
        "(bill)",
        "read",
        "(sim)",
        "read",
        "(bill)",
        "write",
        "(sim)",
    ]
    page = result._repr_html_()
    from wm_kernel.utils.htmltext import dollars_as_text

    for column in columns:  # each $ as text no typesetter pairs (wm_kernel.utils.htmltext)
        assert f"<th>{dollars_as_text(column)}</th>" in page


def test_the_plot_shows_both_cumulative_costs(sent: tuple[Session, Simulation]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    _, sim = sent
    figure = reconcile(sim, simulated_usage(sim)).plot()
    lines = figure.axes[0].get_lines()
    assert [line.get_label() for line in lines] == ["simulated", "billed"]
    assert lines[1].get_ydata()[-1] == pytest.approx(sim.total_cost)


def test_a_steady_total_ratio_is_a_tokenizer_even_where_the_cache_split_moved(sent: tuple[Session, Simulation]) -> None:
    # every billed prompt is 1.145x the simulated one; on turn 2 the provider read 300 tokens fewer
    # than the factor gives: still the steady factor; on turn 4 it read nothing: a miss, said so
    _, sim = sent
    records = billed(sim)
    for n, record in enumerate(records):
        usage = record["response"]["usage"]
        total = usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
        read, written = (
            round(usage["cache_read_input_tokens"] * 1.145),
            round(usage["cache_creation_input_tokens"] * 1.145),
        )
        if n == 2:
            read -= 300
        if n == 4:
            read = written = 0
        usage.update(input_tokens=round(total * 1.145) - read - written, cache_read_input_tokens=read)
        usage.update(cache_creation_input_tokens=written, cache_creation={"ephemeral_5m_input_tokens": written})
        del record["request"]
    result = reconcile(sim, records)
    assert causes(result) == ["tokenizer"] * 4 + ["provider_miss"]
    assert result.rows.loc[2, "detail"] == (
        "counts x1.145 in total (steady over 4 turns); 300 tokens fewer read from the cache than the factor gives"
    )
    assert str(result).splitlines()[2] == "tokenizer factor 1.145 (billed / predicted tokens)"


def test_the_one_hour_columns_say_they_count_writes(sent: tuple[Session, Simulation]) -> None:
    _, sim = sent
    table = reconcile(sim, simulated_usage(sim)).table()
    assert {"1h writes (sim)", "1h writes (bill)"} <= set(table.columns)
