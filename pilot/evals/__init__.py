"""`pilot eval`: does an agent on Pilot do the task, stay inside the policy, and follow the refusal?

Cases are data (pilot/evals/cases/); a model (an OpenAI-compatible or Anthropic endpoint, or the scripted
offline provider) drives Pilot over a real MCP session on the paper exchange, and each run is scored on its
first decision and on the exchange's end state (pilot/evals/scoring.py).
"""

from pilot.evals.budget import Budget, BudgetSpent, Prices
from pilot.evals.case_book import Case, CaseError, load_cases
from pilot.evals.episode import Limits
from pilot.evals.runner import EvalRun, run_evals
from pilot.evals.scorecard import report_record, write_report
from pilot.evals.scripted import ScriptedProvider

__all__ = [
    "Budget",
    "BudgetSpent",
    "Case",
    "CaseError",
    "EvalRun",
    "Limits",
    "Prices",
    "ScriptedProvider",
    "load_cases",
    "report_record",
    "run_evals",
    "write_report",
]
