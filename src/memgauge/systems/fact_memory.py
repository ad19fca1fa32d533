"""fact-memory: the Mem0 / A-Mem / LangMem family, built in (design 0026).

At ingest the LLM extracts atomic facts from each session (each with the turn, and image,
it comes from), then decides for each new fact ADD, UPDATE (replace a stored fact), DELETE
(a stored fact is no longer true) or NONE (already known) against the most similar stored
facts. At answer time the stored facts are ranked against the question (BM25) and the top
``top_k`` are read, oldest first, by the run's model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigFieldError, entry, option_error
from ..registry import system, uses_model
from ..schema import Episode, EvidenceRef, Question, Response, Session
from ._base import MemorySystem, SystemContext, SystemFactory
from ._memory import (
    EMBEDDER_OPTIONS,
    SCHEMA_VERSION,
    Caller,
    EmbeddedTexts,
    IngestFailure,
    answer_from,
    embedded_texts,
    image_rendering,
    item_text_tokens,
    list_field,
    list_reply,
    message,
    pointer_of,
    prompt_version,
    rank_with,
    render_session,
    retrieved_list,
    retriever_requirements,
    string,
    text_modality,
)

OPTIONS = {"top_k": (int, "facts the reader sees (default 10)"),
           "similar_k": (int, "stored facts shown per new fact when deciding (default 5)"),
           "retriever": (str, "bm25 (default) | embed: how facts are ranked"),
           **EMBEDDER_OPTIONS}

EXTRACT_PROMPT = (
    "You read one session of a conversation and write down the facts worth remembering about "
    "the user and their world: one short, self-contained statement per fact (names, numbers, "
    "dates, places, preferences, plans, what images show). Each turn is labelled [T1], [T2], "
    "...; each image [I1], [I2], ....\n"
    'Reply with JSON only: {"facts": [{"fact": "...", "turn": "T1", "image": "I1" or null}]}. '
    'Use {"facts": []} when there is nothing to remember.'
)
DECIDE_PROMPT = (
    "You keep a memory of facts. For each new fact, compare it with the stored facts shown and "
    "decide one operation:\n"
    "ADD: it is new information;\n"
    "UPDATE: it changes or refines a stored fact (give that fact's id and the new text);\n"
    "DELETE: it shows that a stored fact is no longer true (give that fact's id);\n"
    "NONE: the memory already holds it.\n"
    'Reply with JSON only: {"decisions": [{"new": 1, "op": "ADD|UPDATE|DELETE|NONE", '
    '"id": "F3" or null, "text": "..." or null}]}, one decision per new fact.'
)
VERSION = prompt_version(EXTRACT_PROMPT, DECIDE_PROMPT, SCHEMA_VERSION)
OPS = ("ADD", "UPDATE", "DELETE", "NONE")
# Tokens of an item's fields besides its free text (keys, quotes, a label, null).
# (pretty-printed: a line and an indent per field, as SmolLM2 writes it)
_FACT_FIXED_TOKENS = 28
_DECISION_FIXED_TOKENS = 34


@dataclass
class Fact:
    fid: str
    text: str
    date: str | None
    source: EvidenceRef
    session_index: int
    replaced: list[str]  # earlier wordings this fact replaced (UPDATE)

    def document(self) -> str:
        return f"{self.date or ''} {self.text}"


class FactMemory:
    name = "fact-memory"

    def __init__(self, ctx: SystemContext, embedded: EmbeddedTexts | None = None) -> None:
        self.ctx = ctx
        opts = ctx.typed_options(self.name, OPTIONS)
        self.top_k = opts.get("top_k", 10)
        self.similar_k = opts.get("similar_k", 5)
        self.retriever = opts.get("retriever", "bm25")
        if self.top_k < 1 or self.similar_k < 1:
            raise ConfigFieldError(f"{entry('system_options', 'top_k')} and similar_k must be "
                                   "at least 1", "system_options")
        if self.retriever not in ("bm25", "embed"):
            raise option_error("retriever", "use bm25 or embed", repr(self.retriever))
        self.embedded = embedded or embedded_texts(self.name, opts, self.retriever,
                                                   ctx.api_key_env)
        self.modality = text_modality(ctx)
        self.reset_state()

    def reset_state(self) -> None:
        self.caller = Caller(self.ctx)
        self.facts: dict[str, Fact] = {}
        self.n_made = 0
        self.n_sessions = 0
        self.ops = dict.fromkeys(OPS, 0)

    def describe(self) -> dict[str, Any]:
        out = {"name": self.name, "top_k": self.top_k, "similar_k": self.similar_k,
               "retriever": self.retriever, "context_mode": self.ctx.context_mode,
               "instruction": self.ctx.instruction, "prompt_version": VERSION}
        if self.embedded is not None:  # only when named: earlier manifests read the same
            out["embedder"] = self.embedded.embedder.name
        return out

    async def reset(self, episode: Episode) -> None:
        self.reset_state()

    # --- ingest ---

    async def ingest(self, session: Session) -> None:
        index = self.n_sessions
        self.n_sessions += 1
        shown = render_session(session, images=image_rendering(self.ctx))
        raw = await self.caller.ingest_json(
            [message("system", EXTRACT_PROMPT),
             message("user", shown.text)],
            list_field("facts"), stage="extract", session_id=session.session_id,
            schema=self._extract_schema())
        if not raw:
            return
        new: list[Fact] = []
        for item in raw:
            text = item.get("fact")
            if not isinstance(text, str) or not text.strip():
                continue
            ref = (pointer_of(shown.labels, item.get("image"))
                   or pointer_of(shown.labels, item.get("turn"))
                   or EvidenceRef(session_id=session.session_id))
            new.append(Fact("", text.strip(), session.date, ref, index, []))
        if not new:
            return
        similar = await self._similar(new)
        if not similar:  # nothing stored resembles them: no decision to ask for
            for fact in new:
                self._add(fact)
            return
        decisions = await self.caller.ingest_json(
            [message("system", DECIDE_PROMPT), message("user", _decide_input(new, similar))],
            list_field("decisions"), stage="decide", session_id=session.session_id,
            schema=self._decide_schema(len(new)), loses=False)  # undecided: added
        self._apply(session, new, decisions or [], parsed=decisions is not None)

    def _extract_schema(self) -> dict[str, Any]:
        budget = self.caller.tokens()
        text = item_text_tokens(budget, _FACT_FIXED_TOKENS, 24)
        return list_reply("facts", {"fact": string(text), "turn": string(3),
                                    "image": string(3, nullable=True)},
                          budget, text + _FACT_FIXED_TOKENS)

    def _decide_schema(self, n_new: int) -> dict[str, Any]:
        budget = self.caller.tokens()
        text = item_text_tokens(budget, _DECISION_FIXED_TOKENS, 20)
        item = {"new": {"type": "integer", "minimum": 1, "maximum": n_new},
                "op": {"enum": list(OPS)}, "id": string(3, nullable=True),
                "text": string(text, nullable=True)}
        return list_reply("decisions", item, budget, text + _DECISION_FIXED_TOKENS,
                          at_most=n_new)

    async def _similar(self, new: list[Fact]) -> list[Fact]:
        stored = list(self.facts.values())
        if not stored:
            return []
        docs = [f.document() for f in stored]
        out: dict[str, Fact] = {}
        for fact in new:
            ranked = await rank_with(docs, fact.text, self.retriever, self.embedded)
            for i, score in ranked[: self.similar_k]:
                if score > 0:
                    out.setdefault(stored[i].fid, stored[i])
        return sorted(out.values(), key=lambda f: int(f.fid[1:]))

    def _add(self, fact: Fact) -> None:
        self.n_made += 1
        fact.fid = f"F{self.n_made}"
        self.facts[fact.fid] = fact
        self.ops["ADD"] += 1

    def _apply(self, session: Session, new: list[Fact], decisions: list[dict[str, Any]],
               *, parsed: bool) -> None:
        """One decision per new fact; a fact without a usable decision is added (kept
        rather than lost), and each such case is recorded."""
        by_new: dict[int, dict[str, Any]] = {}
        for d in decisions:
            n = d.get("new")
            if isinstance(n, int | str) and str(n).strip().isdigit():
                by_new.setdefault(int(str(n).strip()), d)
        for n, fact in enumerate(new, 1):
            d = by_new.get(n)
            op = str(d.get("op", "")).strip().upper() if d else ""
            target = self.facts.get(_fact_id(d.get("id"))) if d else None
            if op in ("UPDATE", "DELETE") and target is None:
                if parsed:
                    self._failure(session, f"decision for new fact {n}: {op} of unknown id "
                                           f"{d.get('id')!r}; added instead")  # type: ignore[union-attr]
                op = "ADD"
            if op not in OPS:
                if parsed:
                    self._failure(session, f"no valid decision for new fact {n}; added")
                op = "ADD"
            if op == "ADD":
                self._add(fact)
            elif op == "UPDATE":
                assert target is not None and d is not None
                text = d.get("text")
                target.replaced.append(target.text)
                target.text = text.strip() if isinstance(text, str) and text.strip() else fact.text
                target.date, target.source = fact.date, fact.source
                target.session_index = fact.session_index
                self.ops["UPDATE"] += 1
            elif op == "DELETE":
                assert target is not None
                del self.facts[target.fid]
                self.ops["DELETE"] += 1
            else:
                self.ops["NONE"] += 1

    def _failure(self, session: Session, text: str) -> None:
        self.caller.ledger.failures.append(
            IngestFailure(session.session_id, "decide", "bad_decision", text, lost=False))

    # --- answer ---

    def memory(self) -> dict[str, int]:
        blob = json.dumps([[f.text, f.date] for f in self.facts.values()])
        return {"items": len(self.facts), "bytes": len(blob.encode())}

    async def answer(self, question: Question) -> Response:
        failed = self.caller.failed(self.memory(), question)
        if failed is not None:
            return failed
        stored = list(self.facts.values())
        ranking = await rank_with([f.document() for f in stored], question.text,
                                  self.retriever, self.embedded)
        top = ranking[: self.top_k]
        chosen = sorted((stored[i] for i, _ in top), key=lambda f: (f.session_index, f.fid))
        notes = "\n".join(f"- [{f.date or 'unknown date'}] {f.text}" for f in chosen)
        retrieved = retrieved_list([(stored[i].source, s) for i, s in top],
                                   [(stored[i].source, s) for i, s in ranking])
        meta = {**self.caller.ledger.as_meta(), "memory": self.memory(),
                "operations": dict(self.ops), "facts_read": len(chosen)}
        response = await answer_from(self.ctx, question, notes, meta=meta)
        response.retrieved = retrieved
        return response


def _fact_id(raw: Any) -> str:
    key = str(raw or "").strip().strip("[]").upper()
    return f"F{key}" if key.isdigit() else key


def _decide_input(new: list[Fact], similar: list[Fact]) -> str:
    stored = "\n".join(f"{f.fid}: [{f.date or 'unknown date'}] {f.text}" for f in similar)
    fresh = "\n".join(f"{n}. [{f.date or 'unknown date'}] {f.text}" for n, f in enumerate(new, 1))
    return f"Stored facts:\n{stored}\n\nNew facts:\n{fresh}\n"


@system("fact-memory", OPTIONS, retriever_requirements, uses_model)
def fact_memory(ctx: SystemContext) -> SystemFactory:
    """Extracts atomic facts per session, reconciles them (ADD/UPDATE/DELETE/NONE) with the
    most similar stored ones; the model answers from the top_k facts (BM25)"""
    first = FactMemory(ctx)  # options checked before the first request

    def make() -> MemorySystem:
        return FactMemory(ctx, first.embedded)

    make.endpoints = first.embedded.endpoints if first.embedded else list  # type: ignore[attr-defined]
    return make
