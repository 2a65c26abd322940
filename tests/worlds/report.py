"""Summarise a survey of random worlds: `python -m tests.worlds.report FILE [--examples N]`.

FILE holds what `PILOT_WORLDS_REPORT=FILE pytest tests/worlds/test_random_worlds.py` wrote: one JSON line
per world with its figures and findings. Prints the totals (worlds, cases, replay pass rate, loops, false
"nothing fits", what the moving market did) and, for every kind of finding, how often it occurred and its
smallest reproduction.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def summary(worlds: list[dict[str, Any]], examples: int = 1) -> str:
    stats: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    in_worlds: Counter[str] = Counter()
    samples: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for world in worlds:
        stats.update(world["stats"])
        seen = set()
        for finding in world["findings"]:
            kind = finding["kind"]
            kinds[kind] += 1
            seen.add(kind)
            samples[kind].append(finding["detail"])
        in_worlds.update(seen)
    failing_worlds = sum(1 for w in worlds if any(f["failing"] for f in w["findings"]))
    replays = stats["replays ok"] + stats["replays refused"]
    lines = [
        f"worlds: {len(worlds)} ({failing_worlds} with a failing finding)",
        f"cases: {stats['cases']} (plan_order calls {stats['calls plan_order']}, "
        f"place_order {stats['calls place_order']}, close_position {stats['calls close_position']})",
        f"refusals followed: {stats['refusals']}; suggested plan_order: {stats['suggestions']}; "
        f"replays ok {stats['replays ok']} of {replays}"
        + (f" ({100 * stats['replays ok'] / replays:.1f} %)" if replays else ""),
        f"size cuts checked one step further: {stats['cuts']}",
        f"loops (still a call after 2 hops): {stats['loops']}",
        f"terminal answers (tool null): {stats['terminal']}; false 'nothing fits' (confirmed by Pilot's own "
        f"plan of the oracle's witness): {stats['false nothing fits']}; oracle and Pilot disagree: "
        f"{stats['oracle disagrees']}; dust positions the oracle would close, answered terminal: "
        f"{stats['dust close not offered']}",
        f"unknown symbols asked: {stats['unknown symbols']}; confirmation refusals at place: "
        f"{stats['confirmation refusals']}",
        f"the market: {stats['exchange seconds']} s of exchange time; fills it made: resting orders "
        f"{stats['market fills resting']}, stop-losses {stats['market fills StopLoss']}, liquidations "
        f"{stats['market fills BustTrade']}; placed fills with a stop {stats['placed fills with a stop']}; "
        f"place_order refused after a move {stats['place refused after a move']}",
        "",
        *tool_table(stats),
        "",
        "findings by kind (count, worlds):",
    ]
    lines += [f"  {count:5d} {in_worlds[kind]:4d}  {kind}" for kind, count in sorted(kinds.items())]
    for kind in sorted(kinds):
        lines += ["", f"## {kind}"]
        for detail in sorted(samples[kind], key=lambda d: len(json.dumps(d)))[:examples]:
            lines.append(json.dumps(detail, indent=1, default=str))
    return "\n".join(lines)


TOOLS = (
    "plan_order",
    "close_position",
    "plan_amend",
    "place_order",
    "cancel_order",
    "cancel_all_orders",
    "set_leverage",
    "set_trading_stop",
)


def tool_table(stats: Counter[str]) -> list[str]:
    """Per tool that can refuse: its calls, refusals, and the six figures issue 24 asks for."""

    def get(tool: str, what: str) -> int:
        return stats[f"{tool} | {what}"]

    def rate(ok: int, of: int) -> str:
        return f"{100 * ok / of:.1f} % of {of}" if of else "-"

    lines = [
        "| tool | calls | refusals | replay ok | maximal | loops | false nothing fits | reducing refused "
        "| exchange rejected |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for tool in TOOLS:
        suggestions = get(tool, "suggestions")
        checked = get(tool, "maximal checked")
        lines.append(
            f"| {tool} | {stats[f'calls {tool}']} | {get(tool, 'refusals')} "
            f"| {rate(get(tool, 'replays ok'), suggestions)} "
            f"| {rate(checked - get(tool, 'not maximal'), checked)} | {get(tool, 'loops')} "
            f"| {get(tool, 'false nothing fits')} | {get(tool, 'reducing refused')} "
            f"| {get(tool, 'exchange rejected')} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file", type=Path)
    parser.add_argument("--examples", type=int, default=1)
    options = parser.parse_args()
    print(summary(load(options.file), options.examples))


if __name__ == "__main__":
    main()
