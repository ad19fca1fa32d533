"""The token and cost ledger of records, and prices (design 0027, 0034).

Kept apart from ``analysis`` (numpy, the report tables) so the runner can keep a ledger and
a budget without importing them: stdlib only.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memgauge.errors import InputError

if TYPE_CHECKING:
    from memgauge.schema import Record

__all__ = ["JudgeSpend", "Ledger", "Price", "judge_usage_of", "ledger_of", "load_prices",
           "price_for"]

PRICE_FIELDS = ("input", "output")
OPTIONAL_PRICE_FIELDS = ("cached_input",)


@dataclass(frozen=True)
class Price:
    """Dollars per 1M input and output tokens; ``cached_input`` per 1M input tokens the
    server served from its prompt cache (None: priced as input)."""

    input: float
    output: float
    cached_input: float | None = None

    def dollars(self, input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> float:
        """``cached_tokens`` are part of ``input_tokens``."""
        cached = min(cached_tokens, input_tokens) if self.cached_input is not None else 0
        return ((input_tokens - cached) * self.input + output_tokens * self.output
                + cached * (self.cached_input or 0.0)) / 1e6


def load_prices(path: str | Path) -> dict[str, Price]:
    """``{"<model spec or name>": {"input": $/1M, "output": $/1M}}`` (optionally
    ``"cached_input": $/1M``) from a JSON or TOML file (TOML by the ``.toml`` suffix). Anything else
    is an :class:`InputError` naming the file,
    the model and the field."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the prices file: {exc.strerror or exc}",
                         file=str(path)) from None
    try:
        if path.suffix.lower() == ".toml":
            data: Any = tomllib.loads(raw.decode("utf-8"))
        else:
            data = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, TOMLDecodeError
        kind = "TOML" if path.suffix.lower() == ".toml" else "JSON"
        raise InputError(f"not valid {kind}: {exc}", file=str(path)) from None
    if not isinstance(data, dict) or not data:
        raise InputError('must map model names to {"input": $/1M, "output": $/1M}',
                         file=str(path))
    return {str(model): _price(path, str(model), entry) for model, entry in data.items()}


def _price(path: Path, model: str, entry: Any) -> Price:
    if not isinstance(entry, dict):
        raise InputError('must be {"input": $/1M tokens, "output": $/1M tokens}',
                         file=str(path), item=model)
    unknown = sorted(set(entry) - set(PRICE_FIELDS) - set(OPTIONAL_PRICE_FIELDS))
    if unknown:
        raise InputError(f"unknown field(s) {', '.join(map(repr, unknown))}; a price has "
                         "input and output, and optionally cached_input ($ per 1M tokens)",
                         file=str(path), item=model)
    values: list[float | None] = []
    for name in (*PRICE_FIELDS, *OPTIONAL_PRICE_FIELDS):
        value = entry.get(name)
        if value is None and name in OPTIONAL_PRICE_FIELDS:
            values.append(None)
            continue
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value) or value < 0):
            raise InputError(f"needs a number ≥ 0 ($ per 1M tokens), got {value!r}",
                             file=str(path), item=model, field=name)
        values.append(float(value))
    return Price(*values)  # type: ignore[arg-type]


def price_for(model: str, prices: Mapping[str, Price]) -> Price | None:
    """The price of a run's ``--model`` spec: the spec itself (``openai:gpt-4o``), else its
    name without the provider (``gpt-4o``)."""
    if model in prices:
        return prices[model]
    _, sep, name = model.partition(":")
    return prices.get(name) if sep and name else None


@dataclass
class JudgeSpend:
    """What one judge model's calls spent, as its replies reported it. A reply replayed
    from the response cache was not paid for: not counted; one without usage: ``unknown``."""

    calls: int = 0  # calls whose usage is known
    unknown: int = 0
    input_tokens: int = 0  # cached included
    cached_input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, other: Mapping[str, Any]) -> None:
        """One ``meta.judge_usage`` entry (or another spend as its dict)."""
        self.calls += _whole(other, "calls") or 0
        self.unknown += _whole(other, "unknown") or 0
        self.input_tokens += _whole(other, "input_tokens") or 0
        self.cached_input_tokens += _whole(other, "cached_input_tokens") or 0
        self.output_tokens += _whole(other, "output_tokens") or 0

    def add_reply(self, usage: Any) -> None:
        """One reply's usage (a ``schema.Usage``): a known call, or ``unknown``."""
        prompt, output = usage.input_tokens, usage.output_tokens
        if prompt is None or output is None:
            self.unknown += 1
            return
        self.calls += 1
        self.input_tokens += prompt
        self.cached_input_tokens += min(usage.cached_tokens or 0, prompt)
        self.output_tokens += output

    def dollars(self, price: Price) -> float:
        return price.dollars(self.input_tokens, self.output_tokens, self.cached_input_tokens)

    def to_dict(self) -> dict[str, int]:
        return {"calls": self.calls, "unknown": self.unknown,
                "input_tokens": self.input_tokens,
                "cached_input_tokens": self.cached_input_tokens,
                "output_tokens": self.output_tokens}


def judge_usage_of(meta: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """A record's ``meta.judge_usage``: judge model spec -> its spend on this record (what
    every judging of the record spent, summed: a re-judged record paid twice)."""
    raw = meta.get("judge_usage")
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): v for k, v in raw.items() if isinstance(v, Mapping)}


@dataclass
class Ledger:
    """Tokens spent according to records, and their dollars at a price. A record's tokens
    are its answer's server counts (input, of them cached, output) plus its ingest share
    (``record.cost``). A reply replayed from memgauge's response cache was not paid for
    here: not counted. A reply that reported no usage is counted as ``unknown``, not 0."""

    records: int = 0  # records whose tokens are known
    unknown: int = 0  # answered records whose reply reported no usage
    input_tokens: int = 0  # answer prompts (cached included) and ingest prompts
    cached_input_tokens: int = 0  # of the answer prompts, served from the server's cache
    output_tokens: int = 0  # answers and ingest completions
    # the judges' calls, per judge model spec (meta.judge_usage), apart from the answers
    judges: dict[str, JudgeSpend] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        """The answers' tokens (and ingest): the system's spend, without the judges."""
        return self.input_tokens + self.output_tokens

    @property
    def judge_tokens(self) -> int:
        return sum(j.total_tokens for j in self.judges.values())

    def add_judge(self, model: str, spend: Mapping[str, Any]) -> None:
        self.judges.setdefault(model, JudgeSpend()).add(spend)

    def add_judges(self, meta: Mapping[str, Any]) -> None:
        for model, spend in judge_usage_of(meta).items():
            self.add_judge(model, spend)

    def add(self, usage: Mapping[str, Any] | None, cost: Mapping[str, Any] | None,
            replayed: bool = False, answered: bool = True) -> None:
        """One record's usage and cost (as dicts); ``answered``: its status is ok."""
        if replayed:
            return
        prompt, output = _whole(usage, "input_tokens"), _whole(usage, "output_tokens")
        if prompt is None or output is None:
            self.unknown += answered
            return
        self.records += 1
        self.input_tokens += prompt + (_whole(cost, "ingest_prompt_tokens") or 0)
        self.cached_input_tokens += min(_whole(usage, "cached_tokens") or 0, prompt)
        self.output_tokens += output + (_whole(cost, "ingest_completion_tokens") or 0)

    def add_raw(self, obj: Mapping[str, Any]) -> None:
        """One line of records.jsonl."""
        meta = obj.get("meta")
        if isinstance(meta, Mapping):
            self.add_judges(meta)
        response = obj.get("response")
        if not isinstance(response, Mapping):
            return
        usage, cost = response.get("usage"), obj.get("cost")
        self.add(usage if isinstance(usage, Mapping) else None,
                 cost if isinstance(cost, Mapping) else None, response.get("cached") is True,
                 obj.get("status") == "ok")

    def add_record(self, record: Record) -> None:
        self.add_judges(record.meta)
        r = record.response
        self.add(r.usage.model_dump() if r.usage else None,
                 record.cost.model_dump() if record.cost is not None else None, r.cached,
                 record.status == "ok")

    def dollars(self, price: Price | None) -> float | None:
        if price is None:
            return None
        return price.dollars(self.input_tokens, self.output_tokens, self.cached_input_tokens)

    def judge_dollars(self, prices: Mapping[str, Price] | None) -> float | None:
        """The judges' dollars; None without prices or when a judge that spent tokens has
        no price."""
        if prices is None:
            return None
        total = 0.0
        for model, spend in self.judges.items():
            price = price_for(model, prices)
            if price is None:
                if spend.total_tokens:
                    return None
                continue
            total += spend.dollars(price)
        return total

    def unpriced_judges(self, prices: Mapping[str, Price]) -> list[str]:
        return sorted(m for m, j in self.judges.items()
                      if j.total_tokens and price_for(m, prices) is None)

    def to_dict(self, price: Price | None = None,
                prices: Mapping[str, Price] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"records": self.records, "unknown": self.unknown,
                               "input_tokens": self.input_tokens,
                               "cached_input_tokens": self.cached_input_tokens,
                               "output_tokens": self.output_tokens,
                               "total_tokens": self.total_tokens}
        spent = self.dollars(price)
        if spent is not None:
            out["usd"] = round(spent, 6)
        if self.judges:
            judges: dict[str, Any] = {}
            for model, spend in sorted(self.judges.items()):
                entry: dict[str, Any] = spend.to_dict()  # counts, and dollars when priced
                judges[model] = entry
                judge_price = price_for(model, prices) if prices is not None else None
                if judge_price is not None:
                    entry["usd"] = round(spend.dollars(judge_price), 6)
            out["judges"] = judges
            out["judge_tokens"] = self.judge_tokens
        return out


def ledger_of(records: Iterable[Record]) -> Ledger:
    out = Ledger()
    for r in records:
        out.add_record(r)
    return out


def _whole(obj: Mapping[str, Any] | None, key: str) -> int | None:
    v = obj.get(key) if obj is not None else None
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None
