"""The run's token and cost ledger, and the budgets that stop it (docs/design/0034).

The ledger is read from the records, never kept apart: a question's tokens are its answer's
server counts (``response.usage``: input, of them cached, output) plus its share of the
ingest tokens (``record.cost``, design 0027). On a rerun the records already in the folder
are summed first, so ``--budget-usd`` and ``--max-tokens-total`` cover the whole run, not
each invocation. A record whose answer has no usage is counted as *unknown*, not as 0.

The judge's calls are in the ledger too, apart from the answers: each judged record keeps
what judging it spent per judge model (``meta.judge_usage``), priced under the judge's own
name. A budget counts both, whichever command spends them: ``run`` (its ``--judge``) or
``score``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigFieldError, literal
from ..ledger import Ledger, Price, load_prices, price_for
from ..runfolder import RECORDS, iter_record_lines


def ledger_of_lines(lines: Iterable[Mapping[str, Any]]) -> Ledger:
    """The ledger of records.jsonl lines, the last line of a question winning (as
    :func:`~memgauge.runner.read_records` does)."""
    last: dict[Any, Mapping[str, Any]] = {}
    for obj in lines:
        last[obj.get("question_id")] = obj
    ledger = Ledger()
    for obj in last.values():
        ledger.add_raw(obj)
    return ledger


def read_ledger(run_dir: str | Path) -> Ledger:
    """The ledger of a run folder's records (empty when there are none yet)."""
    path = Path(run_dir) / RECORDS
    if not path.exists():
        return Ledger()
    return ledger_of_lines(obj for _, obj in iter_record_lines(path) if isinstance(obj, dict))


class Budget:
    """``--budget-usd`` and ``--max-tokens-total`` against the ledger. ``reason`` is set
    once either is reached; the runner then sends nothing more."""

    def __init__(self, usd: float | None, tokens: int | None, price: Price | None,
                 spent: Ledger, prices: Mapping[str, Price] | None = None) -> None:
        self.usd, self.tokens, self.price, self.prices = usd, tokens, price, prices
        self.ledger = spent
        self.spent_before = spent.to_dict(price, prices)
        self.reason: str | None = None
        self._check()

    @property
    def active(self) -> bool:
        return self.usd is not None or self.tokens is not None

    def add(self, record: Any) -> None:
        self.ledger.add_record(record)
        self._check()

    def add_judge(self, model: str, spend: Any) -> None:
        """What judging one record spent (a :class:`~memgauge.ledger.JudgeSpend`)."""
        self.ledger.add_judge(model, spend.to_dict())
        self._check()

    @property
    def spent_usd(self) -> float | None:
        """Answers at the model's price plus judges at theirs; None when a part that spent
        tokens has no price."""
        led = self.ledger
        answers = led.dollars(self.price)
        if answers is None and not led.total_tokens:
            answers = 0.0  # score on a run whose model spent nothing priced (local, replayed)
        judges = led.judge_dollars(self.prices) if led.judge_tokens else 0.0
        return None if answers is None or judges is None else answers + judges

    def _check(self) -> None:
        if self.reason is not None:
            return
        led = self.ledger
        used = led.total_tokens + led.judge_tokens
        if self.tokens is not None and used >= self.tokens:
            judged = f" ({led.judge_tokens:,} by the judge)" if led.judge_tokens else ""
            self.reason = (f"--max-tokens-total {self.tokens:,} reached: "
                           f"{used:,} tokens spent{judged}")
        spent = self.spent_usd
        if self.usd is not None and spent is not None and spent >= self.usd:
            self.reason = f"--budget-usd {self.usd:g} reached: ${spent:.4f} spent"

    def describe(self, spent: Ledger | None = None) -> dict[str, Any]:
        """The manifest's ``budget``: the limits, what the run has spent (all invocations;
        ``spent``, as read back from the records, else as counted while running), what it
        had spent before this invocation, and what stopped it."""
        return {"budget_usd": self.usd, "max_tokens_total": self.tokens,
                "spent": (spent or self.ledger).to_dict(self.price, self.prices),
                "spent_before": self.spent_before, "stopped": self.reason}


def make_budget(run_dir: str | Path, model: str, usd: float | None, tokens: int | None,
                prices_file: str | None, read_spent: bool = True,
                judges: Sequence[str] = (), answering: bool = True) -> Budget:
    """The run's budget, its spend so far read from the folder (``read_spent``). A dollar
    budget needs a price for each model that spends: the answering ``model`` (when
    ``answering``, or when its answers in the folder spent tokens), every judge in
    ``judges`` and every judge the folder's records name. Otherwise a ConfigError before
    the first request; a malformed prices file is an InputError naming the file, the model
    and the field."""
    prices = load_prices(prices_file) if prices_file else None
    price = price_for(model, prices) if prices is not None else None
    spent = read_ledger(run_dir) if read_spent else Ledger()
    if usd is not None:
        need = [model] if price is None and (answering or spent.total_tokens) else []
        judged = set(judges) | {m for m, j in spent.judges.items() if j.total_tokens}
        need += sorted(j for j in judged if prices is None or price_for(j, prices) is None)
        if need:
            names = literal(", ".join(map(repr, need)))
            where = (f"{literal(prices_file)} has no price for {names}" if prices_file
                     else f"give {{prices}} FILE with a price for {names}")
            raise ConfigFieldError(f"{{budget_usd}} {usd:g} needs the price of every model "
                                   f"that spends: {where}", "budget_usd", "prices")
    return Budget(usd, tokens, price, spent, prices)
