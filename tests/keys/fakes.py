"""A stand-in for the exchange's `/v5/user/query-api`: a plain function over a table of keys, no mocks."""

from __future__ import annotations

from dataclasses import dataclass, field

from pilot.exchange.errors import ExchangeError
from pilot.exchange.models import ApiKeyInfo
from pilot.keys.credentials import Credentials


@dataclass
class FakeKeyInfo:
    """Answers with the ApiKeyInfo or the error registered for an API key, and counts the calls."""

    answers: dict[str, ApiKeyInfo | ExchangeError] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    async def __call__(self, credentials: Credentials) -> ApiKeyInfo:
        self.calls.append(credentials.key_id)
        answer = self.answers[credentials.api_key]
        if isinstance(answer, ExchangeError):
            raise answer
        return answer
