"""Choosing a provider from what the human asked for: its name, model, endpoint and the environment
variable that holds its key. The key is read from the environment here and handed to the provider, which
sends it in a header; it is never printed, logged or written to a report.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pilot.core.errors import ErrorCode
from pilot.evals.anthropic_messages import ANTHROPIC_URL, AnthropicMessages
from pilot.evals.case_book import Case
from pilot.evals.conversation import Provider
from pilot.evals.openai_chat import OPENAI_URL, OpenAIChat
from pilot.evals.scripted import Mode, ScriptedProvider

PROVIDERS = ("scripted", "openai", "anthropic")
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


class SetupError(ValueError):
    """What was asked for cannot make a provider: a stable code, the problem, and the fix."""

    def __init__(self, code: ErrorCode, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.code, self.problem, self.fix = code, problem, fix


@dataclass(frozen=True, slots=True)
class ProviderChoice:
    name: str
    model: str | None = None
    base_url: str | None = None
    key_variable: str | None = None
    scripted_mode: Mode = "careful"
    token_field: str = "max_tokens"


def make_provider(
    choice: ProviderChoice, cases: Iterable[Case], environ: Mapping[str, str] = os.environ
) -> Provider:
    """The provider `choice` names. Raises SetupError when a model or key is missing."""
    if choice.name == "scripted":
        return ScriptedProvider(cases, choice.scripted_mode)
    if choice.name not in KEY_VARIABLES:
        raise SetupError(
            ErrorCode.UNKNOWN_PROVIDER, f"no provider {choice.name!r}", f"use one of {', '.join(PROVIDERS)}"
        )
    if not choice.model:
        raise SetupError(
            ErrorCode.NO_MODEL, f"--provider {choice.name} needs --model", "name the model, e.g. --model NAME"
        )
    variable = choice.key_variable or KEY_VARIABLES[choice.name]
    key = environ.get(variable, "")
    if choice.name == "openai":
        if not key and choice.base_url is None:
            raise SetupError(
                ErrorCode.NO_KEY,
                f"{variable} is not set",
                f"export {variable}=...; a local server that needs no key: give its --base-url",
            )
        return OpenAIChat(choice.model, key, choice.base_url or OPENAI_URL, token_field=choice.token_field)
    if not key:
        raise SetupError(
            ErrorCode.NO_KEY,
            f"{variable} is not set",
            f"export {variable}=... (or name another with --api-key-env)",
        )
    return AnthropicMessages(choice.model, key, choice.base_url or ANTHROPIC_URL)
