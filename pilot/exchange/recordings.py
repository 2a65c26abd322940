"""Recorded exchanges with a venue: the one format every recorder writes and the replay server reads.

An *exchange* is one request and its answer, as a JSON object::

    {"method": "GET", "path": "/v5/order/realtime",
     "query": {"category": "linear", "symbol": "BTCUSDT", "limit": "50"},   # GET parameters, as sent
     "body": null,                                                          # POST: the JSON body, parsed
     "status": 200, "headers": {"X-Bapi-Limit-Status": "49"},               # answer: HTTP status, a few headers
     "answer": {"retCode": 0, "retMsg": "OK", "result": {...}, "time": 1}}  # the body (JSON, or text)

A *fixture* is a JSON file ``{"source": {...}, "exchanges": [...]}``; ``source`` names where the answers
come from (repository, path, commit or date). A *recording* is a directory written by a `Recorder`: one
``NNNNN-METHOD-path.json`` file per exchange and a ``source.json``. `load` reads both. Each venue's client
records in its own words (pilot.exchange.bybit.recording: pybit's session; pilot.exchange.okx.client).

Redaction: request headers are never written (they carry the key and the signature); the key and its
secrets are replaced by "REDACTED" wherever they appear, as is any "apiKey" field.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REDACTED = "REDACTED"
SOURCE_FILE = "source.json"


@dataclass(frozen=True, slots=True)
class Exchange:
    """One recorded request and its answer."""

    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    answer: Any = None

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "body": self.body,
            "status": self.status,
            "headers": self.headers,
            "answer": self.answer,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Exchange:
        return cls(
            method=str(data.get("method", "GET")).upper(),
            path=str(data["path"]),
            query={str(k): str(v) for k, v in (data.get("query") or {}).items()},
            body=data.get("body"),
            status=int(data.get("status", 200)),
            headers={str(k): str(v) for k, v in (data.get("headers") or {}).items()},
            answer=data.get("answer"),
        )


def load(path: Path) -> tuple[dict[str, Any], list[Exchange]]:
    """(source, exchanges) of a fixture file or of a recording directory, in recorded order."""
    path = Path(path)
    if path.is_dir():
        source_file = path / SOURCE_FILE
        source = json.loads(source_file.read_text()).get("source", {}) if source_file.exists() else {}
        files = sorted(p for p in path.glob("*.json") if p.name != SOURCE_FILE)
        return source, [Exchange.from_json(json.loads(p.read_text())) for p in files]
    data = json.loads(path.read_text())
    return data.get("source", {}), [Exchange.from_json(item) for item in data["exchanges"]]


def redact(value: Any, secrets: tuple[str, ...]) -> Any:
    """`value` with every secret string replaced and every "apiKey" field blanked."""
    if isinstance(value, dict):
        return {k: (REDACTED if k == "apiKey" else redact(v, secrets)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(item, secrets) for item in value]
    if isinstance(value, str):
        for secret in secrets:
            if secret:
                value = value.replace(secret, REDACTED)
        return value
    return value


class Recorder:
    """Writes recorded exchanges to `directory`, one file each (a venue's client hands them over)."""

    def __init__(
        self,
        directory: Path,
        *,
        secrets: tuple[str, ...],
        environment: str,
        recorded_by: str = "pilot (BybitExchange.connect(record_dir=...))",
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._secrets = tuple(s for s in secrets if s)
        self._lock = threading.Lock()
        existing = [p for p in self.directory.glob("*.json") if p.name != SOURCE_FILE]
        self._counter = itertools.count(len(existing) + 1)
        source = {
            "recordedBy": recorded_by,
            "environment": environment,
            "startedAt": datetime.now(UTC).isoformat(),
        }
        _write(self.directory / SOURCE_FILE, {"source": source})

    def record(self, exchange: Exchange) -> Path:
        with self._lock:
            number = next(self._counter)
        slug = exchange.path.strip("/").replace("/", "-") or "root"
        target = self.directory / f"{number:05d}-{exchange.method}-{slug}.json"
        _write(target, exchange.to_json())
        return target


def _write(path: Path, data: Any) -> None:
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    os.replace(temporary, path)
