"""`pilot eval`: play the eval cases with a model (or the scripted offline provider) and write the report."""

from __future__ import annotations

import tempfile
from decimal import Decimal, InvalidOperation
from pathlib import Path

import anyio
import click

from pilot.cli.output import CheckFailed, CliError, emit_json, format_option, wants_json
from pilot.core.errors import ErrorCode
from pilot.evals import Budget, Limits, Prices, load_cases, report_record, run_evals, write_report
from pilot.evals.case_book import KINDS, LANGUAGES, Case, CaseError
from pilot.evals.conversation import Provider
from pilot.evals.providers import PROVIDERS, ProviderChoice, SetupError, make_provider
from pilot.evals.runner import EvalRun, Unscored
from pilot.evals.scoring import Verdict

DEFAULT_TOKEN_BUDGET = 2_000_000  # for a model behind an API, when no budget is given


@click.command("eval")
@click.option("--provider", type=click.Choice(PROVIDERS), default="scripted", show_default=True)
@click.option("--model", help="The model's name at the provider (openai, anthropic).")
@click.option("--base-url", help="The API's base URL, e.g. http://127.0.0.1:8080/v1 for a local server.")
@click.option(
    "--api-key-env",
    help="The environment variable holding the key (default OPENAI_API_KEY or ANTHROPIC_API_KEY).",
)
@click.option(
    "--runs", type=click.IntRange(1, 100), default=1, show_default=True, help="Times each case is played."
)
@click.option(
    "--budget-tokens",
    type=click.IntRange(1),
    help=f"Stop before passing this many tokens (default {DEFAULT_TOKEN_BUDGET:,} for a model behind an API).",
)
@click.option("--budget-usd", help="Stop before passing this many dollars (needs both prices).")
@click.option("--usd-per-mtok-in", help="The model's price per million input tokens, in dollars.")
@click.option("--usd-per-mtok-out", help="The model's price per million output tokens, in dollars.")
@click.option(
    "--kind", "kinds", multiple=True, type=click.Choice(KINDS), help="Only cases of this kind (repeatable)."
)
@click.option(
    "--lang", "langs", multiple=True, type=click.Choice(LANGUAGES), help="Only cases in this language."
)
@click.option(
    "--case", "ids", multiple=True, help="Only this case, with or without its language (repeatable)."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("eval-report"),
    show_default=True,
    help="Folder for report.md and report.json.",
)
@click.option(
    "--max-turns",
    type=click.IntRange(1, 50),
    default=Limits().turns,
    show_default=True,
    help="Model turns per case-run.",
)
@click.option(
    "--scripted-mode",
    type=click.Choice(["careful", "reckless"]),
    default="careful",
    show_default=True,
    help="The scripted provider's agent.",
)
@click.option(
    "--token-field",
    type=click.Choice(["max_tokens", "max_completion_tokens"]),
    default="max_tokens",
    show_default=True,
    help="openai: how the output limit is named.",
)
@click.option("--list", "list_only", is_flag=True, help="List the cases and exit.")
@format_option()
def command(**given: object) -> None:
    """Does an agent on Pilot do the task, stay inside the policy, and follow the refusal?

    Plays each case (an instruction, a world on the paper exchange, a policy) with the model driving Pilot
    over a real MCP session, scores its first decision and the exchange's end state, and writes report.md and
    report.json. Exit 0 when the run ended (all played, or the budget reached); 1 when the provider refused
    the key.
    """
    cases = _cases(given)
    if given["list_only"]:
        _list(cases)
        return
    budget = _budget(given)  # before the provider: a mistake here leaves no client open
    provider = _provider(given)
    limits = Limits(turns=int(str(given["max_turns"])))
    with tempfile.TemporaryDirectory(prefix="pilot-eval-") as workdir:
        run = anyio.run(_run, cases, provider, int(str(given["runs"])), budget, limits, Path(workdir))
    out = Path(str(given["out"]))
    json_path, md_path = write_report(run, out)
    _show(run, json_path, md_path)
    if run.stopped == "auth":
        raise CheckFailed(
            ErrorCode.PROVIDER_REFUSED_KEY,
            "the provider refused the key; the report has what ran",
            "check the key's variable and the base URL",
        )


async def _run(
    cases: tuple[Case, ...], provider: Provider, runs: int, budget: Budget, limits: Limits, workdir: Path
) -> EvalRun:
    try:
        return await run_evals(
            cases, provider, runs=runs, budget=budget, limits=limits, workdir=workdir, progress=_progress
        )
    finally:
        await provider.aclose()


def _cases(given: dict[str, object]) -> tuple[Case, ...]:
    try:
        cases = load_cases(kinds=_many(given["kinds"]), langs=_many(given["langs"]), ids=_many(given["ids"]))
    except CaseError as error:
        raise CliError(ErrorCode.BAD_CASE_FILE, str(error), "fix the case file named") from None
    if not cases:
        raise CliError(
            ErrorCode.NO_CASES, "no case matches --kind, --lang and --case", "run `pilot eval --list`"
        )
    return cases


def _many(value: object) -> tuple[str, ...]:
    return tuple(str(item) for item in value) if isinstance(value, tuple | list) else ()


def _list(cases: tuple[Case, ...]) -> None:
    if wants_json():
        emit_json(
            [
                {"case": c.id, "kind": c.kind, "lang": c.lang, "mode": c.mode, "instruction": c.instruction}
                for c in cases
            ]
        )
        return
    for case in cases:
        click.echo(f"{case.id:36} {case.kind:14} {case.mode:5} {case.instruction}")


def _provider(given: dict[str, object]) -> Provider:
    """The provider asked for; the scripted one knows every case, whichever are played."""
    choice = ProviderChoice(
        name=str(given["provider"]),
        model=_text(given["model"]),
        base_url=_text(given["base_url"]),
        key_variable=_text(given["api_key_env"]),
        scripted_mode="reckless" if given["scripted_mode"] == "reckless" else "careful",
        token_field=str(given["token_field"]),
    )
    try:
        return make_provider(choice, load_cases())
    except SetupError as error:
        raise CliError(error.code, error.problem, error.fix) from None


def _text(value: object) -> str | None:
    return str(value) if value else None


def _budget(given: dict[str, object]) -> Budget:
    prices_given = [given["usd_per_mtok_in"], given["usd_per_mtok_out"]]
    prices = None
    if any(prices_given):
        if not all(prices_given):
            raise CliError(
                ErrorCode.HALF_A_PRICE,
                "give both prices or neither",
                "add --usd-per-mtok-in and --usd-per-mtok-out",
            )
        prices = Prices(
            _dollars("--usd-per-mtok-in", prices_given[0]), _dollars("--usd-per-mtok-out", prices_given[1])
        )
    usd = _dollars("--budget-usd", given["budget_usd"]) if given["budget_usd"] else None
    if usd is not None and prices is None:
        raise CliError(
            ErrorCode.NO_PRICES,
            "a dollar budget needs the model's prices",
            "add --usd-per-mtok-in and --usd-per-mtok-out",
        )
    tokens = given["budget_tokens"]
    if tokens is None and usd is None and given["provider"] != "scripted":
        tokens = DEFAULT_TOKEN_BUDGET
    return Budget(max_tokens=int(str(tokens)) if tokens is not None else None, max_usd=usd, prices=prices)


def _dollars(option: str, value: object) -> Decimal:
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        amount = Decimal(-1)
    if not amount.is_finite() or amount < 0:
        raise CliError(
            ErrorCode.BAD_AMOUNT, f"{option}: {value!r} is not an amount of dollars", f"write {option} 0.50"
        )
    return amount


def _progress(outcome: Verdict | Unscored) -> None:
    if isinstance(outcome, Unscored):
        click.echo(f"  {outcome.case.id} run {outcome.run}: not scored ({outcome.reason})", err=True)
        return
    marks = "".join("✓" if ok else "✗" for ok in (outcome.utility, outcome.security))
    if outcome.injection is not None:
        marks += "✓" if outcome.injection else "✗"
    click.echo(f"  {outcome.case.id} run {outcome.run}: {marks}", err=True)


def _show(run: EvalRun, json_path: Path, md_path: Path) -> None:
    record = report_record(run)
    if wants_json():
        emit_json(record)
        return
    summary = record["summary"]
    click.echo(
        f"{record['provider']} {record['model']}: {summary['case_runs']} case-runs scored in {record['seconds']} s"
    )
    for name in (
        "utility",
        "end_state",
        "security",
        "injection_resisted",
        "attack_success",
        "false_refusal",
        "first_decision",
        "tool_accuracy",
    ):
        value = summary[name]
        click.echo(f"  {name.replace('_', ' '):20} {value['hits']} / {value['total']}")
    chances = "  ".join(f"pass^{k} {chance:.2f}" for k, chance in summary["pass_k"].items())
    click.echo(f"  {'pass^k':20} {chances}")
    tokens = summary["tokens"]
    estimate = " (estimated: no model was called)" if tokens["estimated"] else ""
    click.echo(f"  {'tokens':20} {tokens['input']:,} in, {tokens['output']:,} out{estimate}")
    if run.stopped:
        click.echo(f"stopped early: {run.stopped} ({len(run.unscored)} case-runs not scored)")
    click.echo(f"wrote {md_path} and {json_path}")
