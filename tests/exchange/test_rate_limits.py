"""Bybit's request limits kept on Pilot's side (pilot.exchange.bybit.rate_limits), on an injected clock."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pilot.exchange.bybit.rate_limits import ENDPOINT_LIMITS, IP_LIMIT, MAX_WAIT_SECONDS, RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_eleventh_order_in_a_second_waits_for_the_first_to_leave_the_window():
    clock = Clock()
    limiter = RateLimiter(clock)
    waits = [limiter.reserve("place_order") for _ in range(11)]
    assert waits[:10] == [0.0] * 10 and waits[10] == 1.0


def test_a_burst_that_would_wait_too_long_is_not_sent_at_all():
    limiter = RateLimiter(Clock())
    waits = [limiter.reserve("set_dcp") for _ in range(20)]  # 5 a second: the 16th would wait 3 s
    assert None in waits and all(w is None or w <= MAX_WAIT_SECONDS for w in waits)
    assert waits.index(None) == 5 * (int(MAX_WAIT_SECONDS) + 1)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["place_order", "cancel_order", "get_positions", "set_dcp"]),
            st.floats(min_value=0, max_value=0.5),
        ),
        max_size=200,
    )
)
def test_no_one_second_window_holds_more_sends_than_the_endpoints_limit(calls: list[tuple[str, float]]):
    clock = Clock()
    limiter = RateLimiter(clock)
    sent: dict[str, list[float]] = {}
    for method, pause in calls:
        clock.now += pause
        wait = limiter.reserve(method)
        if wait is not None:
            sent.setdefault(method, []).append(clock.now + wait)
    for method, times in sent.items():
        times.sort()
        limit = ENDPOINT_LIMITS[method]
        assert all(times[i + limit] - times[i] >= 1.0 - 1e-9 for i in range(len(times) - limit)), method
    everything = sorted(t for times in sent.values() for t in times)
    count, span = IP_LIMIT
    assert all(everything[i + count] - everything[i] >= span - 1e-9 for i in range(len(everything) - count))
