"""Scorers. Importing this package registers the rule scorers "rule", "subem" and "f1" and
the judge rubrics "memlens" and "memeye" (in :mod:`memgauge.registry`, where plugins'
scorers and rubrics join them)."""

from ._base import Scorer
from ._extract import ExtractMatchScorer
from ._judge import (
    JudgeCase,
    JudgeFailure,
    JudgeScorer,
    Rubric,
    get_rubric,
    prepare,
    register_rubric,
    rubric_names,
)
from ._judge_labels import GROUNDING_FAILURE, JUDGE_LABELS, UNSUPPORTED_ANSWER
from ._judge_run import JudgeOptions, JudgePipeline, judge_records, judge_run, record_judging
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
from ._route import judge_applies, record_measure, rule_scorers_for
from ._rubric_memeye import MemEyeRubric, parse_level
from ._rubric_memlens import VERSION as JUDGE_PROMPT_VERSION
from ._rubric_memlens import MemLensRubric, build_prompt, parse_reply, task_key
from ._rules import (
    SubEMScorer,
    TokenF1Scorer,
    TypedRuleScorer,
    default_scorers,
    registered_scorers,
)
from ._text import normalize_text, subem, token_f1

register_rubric("memlens", MemLensRubric)
register_rubric("memeye", MemEyeRubric)

__all__ = [
    "GROUNDING_FAILURE",
    "JUDGE_LABELS",
    "JUDGE_PROMPT_VERSION",
    "REFUSAL_PATTERNS",
    "UNSUPPORTED_ANSWER",
    "ExtractMatchScorer",
    "JudgeCase",
    "JudgeFailure",
    "JudgeOptions",
    "JudgePipeline",
    "JudgeScorer",
    "MemEyeRubric",
    "MemLensRubric",
    "Rubric",
    "Scorer",
    "SubEMScorer",
    "TokenF1Scorer",
    "TypedRuleScorer",
    "build_prompt",
    "default_scorers",
    "get_rubric",
    "is_refusal",
    "judge_applies",
    "judge_records",
    "judge_run",
    "normalize_text",
    "parse_amounts",
    "parse_choice",
    "parse_dates",
    "parse_integers",
    "parse_level",
    "parse_numbers",
    "parse_order",
    "parse_reply",
    "parse_yes_no",
    "prepare",
    "record_judging",
    "record_measure",
    "register_rubric",
    "registered_scorers",
    "rubric_names",
    "rule_scorers_for",
    "subem",
    "task_key",
    "token_f1",
]
