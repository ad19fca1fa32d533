"""MemLens (xrenaf/MEMLENS): multimodal long-term memory, one haystack per question.

The tier files are large (the 256K tier is 778 MB), so items are streamed one at a time
and the numerous objects (turns, images) are built without validation after hand-written
checks that name the file, the item and the field of any problem.

Item fields (see the format notes): ``question_id``, ``question``, ``answer`` (optional for
answer_refusal), ``question_type``, ``question_subtype``, ``question_date``,
``haystack_sessions`` (each a list of turns or ``{"date", "session"}``), ``haystack_dates``,
``old_answer`` (knowledge_update) and, if the data has them, ``answer_session_ids`` /
``evidence``. A turn is ``{role, content, images?}``.

Session dates follow the reference: a bare turn list takes its ``haystack_dates`` entry, an
object only its own ``date``; a session without one is shown as ``Date: unknown``. One
deliberate difference: a ``null`` date is shown as ``unknown`` too, where the reference's
f-string prints ``None``.
"""

from __future__ import annotations

import re
from typing import Any

from ..registry import benchmark
from ..schema import (
    Ability,
    AnswerType,
    BenchmarkInfo,
    Episode,
    EvidenceRef,
    Question,
    Session,
)
from ._base import BenchmarkOptions, inferred_labels, require
from ._parse import opt_str, scalar_str, type_name
from ._streaming import ItemContext, StreamingBenchmark, parse_sessions

REFUSAL_GOLD = "Insufficient information"

QUESTION_TYPES = {
    "information_extraction": Ability.INFORMATION_EXTRACTION,
    "multi_session_reasoning": Ability.MULTI_SESSION_REASONING,
    "temporal_reasoning": Ability.TEMPORAL_REASONING,
    "knowledge_update": Ability.KNOWLEDGE_UPDATE,
    "answer_refusal": Ability.ANSWER_REFUSAL,
}

_CURRENCY_SYMBOLS = "$€£¥₹₩₽₺₪₫₱฿₴₦₡₲₵₸"
_CURRENCY_CODES = frozenset({
    "USD", "EUR", "GBP", "JPY", "CNY", "RMB", "HKD", "TWD", "KRW", "INR", "AUD", "NZD", "CAD",
    "CHF", "SEK", "NOK", "DKK", "ISK", "PLN", "CZK", "HUF", "RON", "BGN", "HRK", "RUB", "UAH",
    "TRY", "ILS", "AED", "SAR", "QAR", "KWD", "EGP", "ZAR", "NGN", "KES", "MAD", "BRL", "MXN",
    "ARS", "CLP", "COP", "PEN", "SGD", "MYR", "THB", "IDR", "PHP", "VND",
})
_CODE_RE = re.compile(r"(?<![A-Za-z])([A-Z]{3})(?![A-Za-z])")
_INT_RE = re.compile(r"^[+-]?\d+$")


def is_currency(answer: str) -> bool:
    if any(c in _CURRENCY_SYMBOLS for c in answer):
        return True
    return any(code in _CURRENCY_CODES for code in _CODE_RE.findall(answer))


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def answer_type_for(qtype: str, subtype: str | None, answer: str) -> tuple[AnswerType, str | None]:
    """MemLens type/subtype (and, for some, the gold answer) → (answer type, our subtype)."""
    a = answer.strip()
    if qtype == "temporal_reasoning":
        if subtype == "duration_comparison":
            return AnswerType.CHOICE, subtype
        if subtype == "order_ranking":
            return AnswerType.ORDER, subtype
        return AnswerType.DATE, subtype
    if qtype == "multi_session_reasoning":
        if subtype == "entity_resolution":
            return (AnswerType.YES_NO if a in ("Yes", "No") else AnswerType.INTEGER), subtype
        if subtype == "counting":
            return AnswerType.INTEGER, subtype
        if subtype == "arithmetic":
            return (AnswerType.CURRENCY if is_currency(a) else AnswerType.NUMBER), subtype
        # An unnamed MSR subtype: go by the answer's shape.
        if a in ("Yes", "No"):
            return AnswerType.YES_NO, subtype
        if _INT_RE.match(a):
            return AnswerType.INTEGER, subtype
        if is_currency(a):
            return AnswerType.CURRENCY, subtype
        if _is_number(a):
            return AnswerType.NUMBER, subtype
        return AnswerType.FREE_TEXT, subtype
    if qtype == "knowledge_update":
        return AnswerType.FREE_TEXT, subtype
    if qtype == "answer_refusal":
        return AnswerType.REFUSAL, subtype
    # information_extraction: the reference judge knows "previnfo"; anything else is "entity".
    return AnswerType.FREE_TEXT, ("previnfo" if subtype == "previnfo" else "entity")





def _session_evidence(item: dict[str, Any], sessions: list[Session],
                      ctx: ItemContext) -> list[EvidenceRef]:
    """Optional ``answer_session_ids`` / ``evidence``: ints are 0-based session positions;
    strings are ids from ``haystack_session_ids`` when the item has them, else our 1-based
    session ids ("1", "2", …)."""
    key = next((k for k in ("answer_session_ids", "evidence") if item.get(k) is not None), None)
    if key is None:
        return []
    values = item[key]
    if type(values) is not list:
        raise ctx.error(f"expected list, got {type_name(values)}", key)
    ours = [s.session_id for s in sessions]
    given = item.get("haystack_session_ids")
    by_name = ({str(v): ours[i] for i, v in enumerate(given) if i < len(ours)}
               if type(given) is list else {sid: sid for sid in ours})
    out: list[EvidenceRef] = []
    for k, v in enumerate(values):
        if type(v) is int:
            if not 0 <= v < len(ours):
                raise ctx.error(f"session index {v} is out of range (0..{len(ours) - 1})",
                                f"{key}[{k}]")
            sid = ours[v]
        elif type(v) is str and v in by_name:
            sid = by_name[v]
        else:
            raise ctx.error(f"{v!r} names no session of this item", f"{key}[{k}]")
        if not any(e.session_id == sid for e in out):
            out.append(EvidenceRef(session_id=sid))
    return out


def parse_item(raw: Any, index: int, ctx: ItemContext, info: BenchmarkInfo,
               keep: set[str] | None) -> Episode | None:
    """One MemLens item → one Episode (or None when ``keep`` filters it out)."""
    ctx.item = f"#{index}"
    if type(raw) is not dict:
        raise ctx.error(f"expected an item object, got {type_name(raw)}")
    qid = raw.get("question_id")
    if type(qid) is not str or not qid:
        if qid is None:
            raise ctx.error("missing required field", "question_id")
        raise ctx.error(f"expected a non-empty str, got {type_name(qid)}", "question_id")
    ctx.item = qid
    if keep is not None and qid not in keep:
        return None
    question = require(raw, "question", str, file=ctx.file, item=qid)
    qtype = require(raw, "question_type", str, file=ctx.file, item=qid)
    ability = QUESTION_TYPES.get(qtype)
    if ability is None:
        raise ctx.error(f"unknown question_type {qtype!r}; known: {', '.join(QUESTION_TYPES)}",
                        "question_type")
    subtype = opt_str(raw, "question_subtype", ctx)
    question_date = opt_str(raw, "question_date", ctx)
    answer = scalar_str(raw, "answer", ctx, required=ability is not Ability.ANSWER_REFUSAL)
    if answer is None:
        answer = REFUSAL_GOLD
    old_answer = scalar_str(raw, "old_answer", ctx, required=False)
    if old_answer is None and type(raw.get("question_content")) is dict:
        old_answer = scalar_str(raw["question_content"], "old_answer", ctx, required=False)
    sessions = parse_sessions(raw, ctx)
    answer_type, our_subtype = answer_type_for(qtype, subtype, answer)
    q = Question(
        question_id=qid,
        text=question,
        answer=answer,
        answer_type=answer_type,
        ability=ability,
        subtype=our_subtype,
        evidence=_session_evidence(raw, sessions, ctx),
        old_answers=[old_answer] if old_answer is not None and ability is Ability.KNOWLEDGE_UPDATE
        else [],
        question_date=question_date,
        meta={"question_type": qtype, "question_subtype": subtype},
    )
    q.labels = inferred_labels(q, sessions)
    return Episode(episode_id=qid, sessions=sessions, questions=[q], benchmark=info,
                   meta={"index": index})


class MemLensBenchmark(StreamingBenchmark):
    name = "memlens"

    def _parse(self, raw: Any, index: int, ctx: ItemContext) -> Episode | None:
        return parse_item(raw, index, ctx, self.info, self.keep)


@benchmark("memlens")
def memlens(opts: BenchmarkOptions) -> MemLensBenchmark:
    """MemLens tier file (``dataset_{32k,64k,128k,256k}.json``); images under ``--image-dir``
    (default: the data file's folder)."""
    return MemLensBenchmark(opts)
