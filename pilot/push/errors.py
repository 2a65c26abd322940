"""What a push service's failure is called outside pilot/push: one exception, without secrets."""

from __future__ import annotations


class PushError(Exception):
    """A call to Telegram or ntfy failed: `service`, what went wrong, and when to try again if it said."""

    def __init__(
        self, service: str, problem: str, *, status: int | None = None, retry_after: int | None = None
    ):
        super().__init__(f"{service}: {problem}")
        self.service = service
        self.problem = problem
        self.status = status
        self.retry_after = retry_after
