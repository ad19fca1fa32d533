"""The template contract: a small declarative unit that turns a trajectory into questions
whose answers are computed (design 0032).

A template is a function over a timeline that has already been cut at the horizon (it cannot
see a later step), registered with its id, ability, answer type and the game kinds it reads:

    @template("crafter.inventory_at_step", ability="single_hop", answer_type="integer",
              games=("crafter",))
    def inventory_at_step(tl: CrafterTimeline, rng: random.Random) -> Iterator[GameQuestion]:
        for step in rng.sample(tl.steps_range(), k=3):
            item = rng.choice(tl.items_seen())
            yield tl.question(params={"item": item, "step": step}, answer=tl.count(item, step),
                              text=f"How many {item} did you have after your action at step "
                                   f"{step}?",
                              evidence_steps=[step])

The generator states the window in the question text, de-duplicates, caps per template and
balances abilities; templates only say what is asked and compute the answer.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

ABILITIES = ("single_hop", "multi_hop", "induction", "spatial", "temporal", "logical",
             "adversarial")
# integer: exact (9.6 is not 9); number: within tolerance; string: one canonical name (rooms,
# items, materials); action: an action name, direction-aware (move_left is not move_right);
# direction: left/right/up/down (and their compass words); yes_no; list: ordered; set:
# unordered; path: a sequence of moves, any of ``alternatives`` (every shortest path) counts.
ANSWER_TYPES = ("integer", "number", "string", "action", "direction", "yes_no", "list", "set",
                "path")
# text: TextWorld and Jericho (same timeline). A "-life" kind reads several trajectories of
# that kind played one after another (cross-episode questions, templates/_life.py).
GAME_KINDS = ("crafter", "text", "crafter-life", "text-life")
NOT_ANSWERABLE = "not answerable"
CLOSED_VALUES = {"yes_no": ("yes", "no")}  # answer types whose values are closed


@dataclass(frozen=True)
class GameQuestion:
    """One generated question. ``answer`` is ``NOT_ANSWERABLE`` exactly when ``answerable``
    is False; ``answer_type`` is then the type a correct answer would have had."""

    template: str
    params: dict[str, Any]
    ability: str
    answer_type: str
    answer: Any  # int | float | str | list[str]
    evidence_steps: list[int]
    horizon: tuple[int, int]  # [first_step, last_step] the question may use
    text: str  # without the window phrase (the generator adds it)
    answerable: bool = True
    alternatives: list[Any] = field(default_factory=list)  # other correct answers
    tolerance: float | None = None  # for answer_type "number": absolute tolerance
    # cross-episode questions: evidence as (trajectory id, step), evidence_steps left empty
    evidence_refs: list[tuple[str, int]] = field(default_factory=list)

    def key(self) -> tuple[str, str]:
        """What makes two questions the same question (de-duplication)."""
        import json

        return self.template, json.dumps(self.params, sort_keys=True, default=str)


TemplateFn = Callable[[Any, random.Random], Iterable[GameQuestion]]


@dataclass(frozen=True)
class Template:
    id: str
    ability: str
    answer_type: str
    games: tuple[str, ...]
    fn: TemplateFn
    doc: str = ""
    # A closed template's answer values (yes/no, before/after): the generator balances them
    # so no constant answer scores well (design 0039). Empty: an open answer.
    values: tuple[str, ...] = ()
    # An always-"not answerable" template worded exactly as an answerable one names that
    # one: the two are one family, which the constant cap and gate measure together, since
    # an answerer cannot tell their questions apart (design 0039).
    twin: str = ""

    @property
    def family(self) -> str:
        return self.twin or self.id


_TEMPLATES: dict[str, Template] = {}


def template(template_id: str, *, ability: str, answer_type: str, games: tuple[str, ...],
             values: tuple[str, ...] | None = None,
             twin: str = "") -> Callable[[TemplateFn], TemplateFn]:
    """Register a template function under a stable id (other tooling relies on the ids).
    ``values`` closes the answer to those values (a yes_no template's are yes and no);
    ``twin`` names the answerable template an adversarial one is worded as."""
    if ability not in ABILITIES:
        raise ValueError(f"template {template_id}: unknown ability {ability!r}")
    if answer_type not in ANSWER_TYPES:
        raise ValueError(f"template {template_id}: unknown answer type {answer_type!r}")
    unknown = set(games) - set(GAME_KINDS)
    if unknown:
        raise ValueError(f"template {template_id}: unknown game kinds {sorted(unknown)}")

    def deco(fn: TemplateFn) -> TemplateFn:
        if template_id in _TEMPLATES and _TEMPLATES[template_id].fn is not fn:
            raise ValueError(f"template {template_id!r} is registered twice")
        closed = values if values is not None else CLOSED_VALUES.get(answer_type, ())
        _TEMPLATES[template_id] = Template(template_id, ability, answer_type, tuple(games), fn,
                                           (fn.__doc__ or "").strip(), tuple(closed), twin)
        return fn

    return deco


def templates_for(game_kind: str) -> list[Template]:
    """Every registered template that reads this game kind, in id order."""
    from . import _load_all

    _load_all()
    return sorted((t for t in _TEMPLATES.values() if game_kind in t.games), key=lambda t: t.id)


def all_templates() -> dict[str, Template]:
    from . import _load_all

    _load_all()
    return dict(_TEMPLATES)
