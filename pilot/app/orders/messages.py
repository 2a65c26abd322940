"""The message throttles (maxOrderMessagesPerSecond/Minute) for the sends evaluate() does not judge: a cancel,
a cancel-all, the dead-man's switch's cancels. Creates and amends are judged by evaluate() with the same rule
(pilot.core.controls.throttle), on the same count: this home's journal, every process of it."""

from __future__ import annotations

from pilot.app.answers.refusals import violation
from pilot.app.answers.responses import Refusal
from pilot.app.runtime.runtime import PolicyView, Runtime
from pilot.core.controls import throttle


async def throttled(runtime: Runtime, view: PolicyView) -> Refusal | None:
    """The refusal of one more message now, with `retry_after`, or None when the throttles allow it."""
    policy = view.policy
    if policy.max_order_messages_per_second is None and policy.max_order_messages_per_minute is None:
        return None
    now = runtime.now()
    journal = await runtime.ledger.state(now)
    breach = throttle(policy, journal.activity.messages, now)
    if breach is None or breach.next is None:
        return None
    refused = violation(breach.rule, breach.limit, breach.attempted, breach.detail, breach.next)
    return Refusal.of(refused, "the message throttle is full; nothing was sent")
