"""Analysis of a run's records: accuracy, confidence intervals, coverage."""

from memgauge.analysis._metrics import (
    CoverageStat,
    ErrorItem,
    GroupStat,
    ScorerStat,
    Summary,
    choose_primary,
    summarize,
)
from memgauge.analysis._stats import bootstrap_ci, mean

__all__ = [
    "CoverageStat",
    "ErrorItem",
    "GroupStat",
    "ScorerStat",
    "Summary",
    "bootstrap_ci",
    "choose_primary",
    "mean",
    "summarize",
]
