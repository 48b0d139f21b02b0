"""The exchanges a conversation had with a model, by turn, and their place in the store.

A History keeps one :class:`ExchangeLog` beside its composes: :mod:`wm_kernel.providers.send`
records what it sent at a turn and the reply (an :class:`~wm_kernel.instruments.exchange.Exchange`),
the History's frame shows them on the turn's rows, and :meth:`ExchangeLog.conversation` is the
message history the next request carries. In a persistent store they live in the hash
``history-exchanges:{user_id}:{continuum_id}`` (see
:data:`wm_kernel.instruments.history_records.SCHEMA`), one field per turn.
"""

from __future__ import annotations

from collections.abc import Mapping

from wm_kernel.instruments.exchange import Exchange
from wm_kernel.instruments.history_records import HistoryConflictError, conflict_message, exchanges_key
from wm_kernel.stores.embedded import StateStore


class ExchangeLog:
    """One conversation's exchanges, in turn order; written to ``store`` when ``persistent``."""

    def __init__(self, store: StateStore, user_id: str, continuum_id: str, *, persistent: bool) -> None:
        self.store = store
        self.user_id = user_id
        self.continuum_id = continuum_id
        self._persistent = persistent
        self._exchanges: dict[int, Exchange] = {}

    @property
    def by_turn(self) -> Mapping[int, Exchange]:
        """turn -> its exchange (read only: record through :meth:`record`)."""
        return self._exchanges

    def record(self, exchange: Exchange) -> None:
        """Keep ``exchange`` as what was sent at its turn and answered; a turn holds one exchange
        (a second one is a ValueError). Stored first, then kept in memory: a failed store write
        records nothing."""
        if not isinstance(exchange, Exchange):
            raise TypeError(f"expected an Exchange, got {type(exchange).__name__}")
        if exchange.turn in self._exchanges:
            raise ValueError(f"turn {exchange.turn} already has an exchange; advance the turn first")
        if self._persistent:
            key = exchanges_key(self.user_id, self.continuum_id)
            with self.store.transaction():
                if self.store.hget(key, str(exchange.turn)) is not None:
                    raise HistoryConflictError(conflict_message(self.user_id, self.continuum_id, exchange.turn))
                self.store.hset(key, str(exchange.turn), exchange.to_json())
        self._exchanges = dict(sorted({**self._exchanges, exchange.turn: exchange}.items()))

    def all(self) -> list[Exchange]:
        """Every recorded exchange, in turn order."""
        return list(self._exchanges.values())

    def at(self, turn: int) -> Exchange | None:
        """The exchange of ``turn``, or None if nothing was sent then."""
        return self._exchanges.get(turn)

    def conversation(self, before: int | None = None) -> list[dict[str, str]]:
        """The messages of every exchange (of turns before ``before`` when given), user and
        assistant alternating."""
        return [m for e in self._exchanges.values() if before is None or e.turn < before for m in e.messages()]

    def load(self) -> None:
        """Read the stored exchanges (a ValueError naming the conversation if one is damaged)."""
        try:
            self._exchanges = dict(
                sorted(
                    (int(turn), Exchange.from_json(raw))
                    for turn, raw in self.store.hgetall(exchanges_key(self.user_id, self.continuum_id)).items()
                )
            )
        except ValueError as exc:
            raise ValueError(
                f"the exchanges of conversation {self.continuum_id!r} (user {self.user_id!r}) cannot be read ({exc})"
            ) from None
