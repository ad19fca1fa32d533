"""Rule scorers. Importing this package registers "rule", "subem" and "f1"."""

from ._base import Scorer
from ._judge import (
    JUDGE_PROMPT_VERSION,
    JudgeFailure,
    JudgeScorer,
    build_prompt,
    parse_reply,
    prepare,
    task_key,
)
from ._judge_run import judge_run
from ._parse import (
    parse_amounts,
    parse_choice,
    parse_dates,
    parse_integers,
    parse_numbers,
    parse_order,
    parse_yes_no,
)
from ._refusal import REFUSAL_PATTERNS, is_refusal
from ._rules import SubEMScorer, TokenF1Scorer, TypedRuleScorer, default_scorers
from ._text import normalize_text, subem, token_f1

__all__ = [
    "JUDGE_PROMPT_VERSION",
    "JudgeFailure",
    "JudgeScorer",
    "build_prompt",
    "judge_run",
    "parse_reply",
    "prepare",
    "task_key",
    "REFUSAL_PATTERNS",
    "Scorer",
    "SubEMScorer",
    "TokenF1Scorer",
    "TypedRuleScorer",
    "default_scorers",
    "is_refusal",
    "normalize_text",
    "parse_amounts",
    "parse_choice",
    "parse_dates",
    "parse_integers",
    "parse_numbers",
    "parse_order",
    "parse_yes_no",
    "subem",
    "token_f1",
]
