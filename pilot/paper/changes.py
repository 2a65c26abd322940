"""Which orders may have changed since the last look, found in time that does not grow with the history.

New orders are at the end of the engine's orders (dicts keep insertion order). An order changes only while
it is open, waiting for its trigger or inside its acknowledgement lag (those are watched from one look to
the next), or when it fills (its fill is new: fills are numbered in order, `seq`). The state log
(state_log.py) writes what a look finds; the order stream (streams.py) pushes it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pilot.paper.engine import Engine, SimExecution


@dataclass(frozen=True, slots=True)
class Looked:
    changed: list[str]  # orders known before that may have changed, then the new ones in the engine's order
    fills: list[SimExecution]  # the fills made since the last look, oldest first


class OrderChanges:
    """One reader's view of what it has seen. `known` None: nothing yet (the first look finds every order)."""

    def __init__(self, engine: Engine | None = None) -> None:
        self._known: set[str] = set(engine.orders) if engine is not None else set()
        self._watch: set[str] = (
            {i for i in engine.orders if may_change(engine, i)} if engine is not None else set()
        )
        self._last_seq = engine.executions[-1].seq if engine is not None and engine.executions else 0

    def look(self, engine: Engine, forgotten: Iterable[str] = ()) -> Looked:
        """What changed since the last look; `forgotten`: the ids the engine let go meanwhile."""
        orders = engine.orders
        self._known.difference_update(forgotten)
        new: list[str] = []
        for order_id in reversed(orders):
            if order_id in self._known:
                break
            new.append(order_id)
        new.reverse()
        fills = []
        for execution in reversed(engine.executions):
            if execution.seq <= self._last_seq:
                break
            fills.append(execution)
        fills.reverse()
        changed = self._watch | engine.open_orders.keys() | engine.stop_book.waiting.keys()
        changed.update(e.order.order_id for e in fills)
        changed.difference_update(new)
        changed.intersection_update(orders)
        found = [*changed, *new]
        self._known.update(new)
        self._watch = {i for i in found if may_change(engine, i)}
        if fills:
            self._last_seq = fills[-1].seq
        return Looked(found, fills)


def may_change(engine: Engine, order_id: str) -> bool:
    return (
        order_id in engine.open_orders or order_id in engine.stop_book.waiting or order_id in engine.lagging
    )
