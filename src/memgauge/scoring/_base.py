"""The Scorer protocol every scorer (rule or judge) implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..schema import Question, Score


@runtime_checkable
class Scorer(Protocol):
    """Scores one prediction against one question's gold answer(s).

    ``score`` returns ``None`` when the scorer does not apply (for instance the prediction is
    missing because the call failed: errors are reported apart, never scored as wrong).
    ``version`` changes whenever the scorer's decisions can change, so cached scores of an
    older version are never mixed with newer ones.

    Example::

        @scorer("exact")
        def exact() -> Scorer: return Exact()
        class Exact:
            name, version = "exact", "1"
            def score(self, q, pred): return None if pred is None else Score(
                value=float(pred.strip() in q.answers), scorer=self.name, version=self.version)
    """

    name: str
    version: str

    def score(self, question: Question, prediction: str | None) -> Score | None: ...
