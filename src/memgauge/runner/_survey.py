"""One read of the input before the first request (design 0043): the run's exact plan, and
the configuration mistakes that only the data shows, each a ``ConfigError`` (exit 2) that
names the fix instead of a run of errors that "rerun the same command" cannot retry.

What it reads is a fresh instance of the benchmark (a loader counts what it hands out, and
the run's own pass must count alone). Reading sends nothing: a local model's tokenizer is
asked to count, nothing is generated.

- ``--question-ids`` naming ids the data does not hold: the loader's own ``InputError``
  (every loader checks its id list), raised here rather than after the last answer;
- the plan: how many questions the folder is meant to hold (after ``--question-ids``,
  ``--limit`` and ``--shard``), known before the first request, so a Ctrl-C leaves it;
- ``--context-mode caption`` without ``--captioner`` on images the data has no caption for;
- a system that answers from a generated benchmark's program (the oracles) on questions
  without one;
- a prompt over ``--max-context-tokens`` (a local model's context less the answer) under
  ``--overflow error``, counted with the run's counter for one question per cut.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigFieldError, entry, literal
from ..prompt import shown_caption
from ..schema import Episode, Question
from ..systems import PromptSizer

SHOWN = 5  # ids or items named in a refusal


@dataclass
class Survey:
    """What the one read found."""

    planned: int = 0  # questions the folder is meant to hold
    in_input: int = 0  # questions in the input after --question-ids (before --limit)
    images: int = 0  # images in the planned questions' histories and questions
    uncaptioned: int = 0  # of those, with no caption in the data
    without_program: list[str] = field(default_factory=list)  # question ids
    over_limit: list[tuple[str, int]] = field(default_factory=list)  # (question id, tokens)
    prompts_counted: int = 0


def survey(episodes: Iterator[Episode], limit: int | None,
           prompt_tokens: Callable[[Episode, Question, int], int | None] | None,
           cut_of: Callable[[Episode, Question], int]) -> Survey:
    """Read ``episodes`` through (already cut to the shard), keeping ``limit`` questions in
    file order as the runner does; count one prompt per (episode, cut) when asked."""
    found = Survey()
    remaining = limit
    for episode in episodes:
        found.in_input += len(episode.questions)
        if remaining is not None and remaining <= 0:
            continue  # read on: the loader checks its id list at the end
        keep = episode.questions if remaining is None else episode.questions[:remaining]
        if remaining is not None:
            remaining -= len(keep)
        found.planned += len(keep)
        _images(episode, keep, found)
        found.without_program += [q.question_id for q in keep if q.meta.get("family") is None]
        if prompt_tokens is not None:
            _count_prompts(episode, keep, prompt_tokens, cut_of, found)
    return found


def _images(episode: Episode, keep: list[Question], found: Survey) -> None:
    refs = [im for s in episode.sessions for t in s.turns for im in t.images]
    refs += [im for q in keep for im in q.images]
    found.images += len(refs)
    found.uncaptioned += sum(shown_caption(im) is None for im in refs)


def _count_prompts(episode: Episode, keep: list[Question],
                   prompt_tokens: Callable[[Episode, Question, int], int | None],
                   cut_of: Callable[[Episode, Question], int], found: Survey) -> None:
    """One prompt per history cut: the questions asked after the same sessions differ only
    in the question, so the cut's longest question stands for them."""
    by_cut: dict[int, Question] = {}
    for q in keep:
        cut = cut_of(episode, q)
        if cut not in by_cut or len(q.text) > len(by_cut[cut].text):
            by_cut[cut] = q
    for cut, q in by_cut.items():
        tokens = prompt_tokens(episode, q, cut)
        found.prompts_counted += 1
        if tokens is not None:
            found.over_limit.append((q.question_id, tokens))


def check(found: Survey, config: Any, *, needs_program: bool, tokenizer: str) -> None:
    """The refusals, first mistake first, each a :class:`ConfigFieldError` naming the
    fields to change (the CLI shows their flags); nothing when the run can go."""
    c = config
    if needs_program and found.without_program:
        ids = literal(", ".join(found.without_program[:SHOWN]))
        options = _options_needing_program(c)
        who = f"{{system}} {literal(c.system)}" + "".join(
            f" {entry('system_options', k)}={literal(v)}" for k, v in options)
        dropped = literal(" and ".join(f"{k}={v}" for k, v in options))
        fix = (f"drop {dropped}, or use {{bench}} synth (a generated benchmark)"
               if options else
               "use {bench} synth (a generated benchmark), or a system that reads the history")
        raise ConfigFieldError(
            f"{who} answers from a generated benchmark's gold program and evidence, which "
            f"{len(found.without_program)} of {found.planned} questions of {{bench}} "
            f"{literal(c.bench)} do not carry (e.g. {ids}): {fix}",
            "system", "system_options", "bench")
    if c.context_mode == "caption" and not c.captioner and found.uncaptioned:
        raise ConfigFieldError(
            f"{{context_mode}} caption: {found.uncaptioned} of {found.images} images have no "
            "caption in the data, and each would be shown as '[Image]': add {captioner} "
            "(e.g. {captioner} vlm:<model>) to caption them, or use {context_mode} image",
            "context_mode", "captioner")
    if found.over_limit:
        raise ConfigFieldError(_over_limit_text(found, c, tokenizer), "max_context_tokens",
                               "max_tokens", "overflow", "model_options")


def _options_needing_program(config: Any) -> list[tuple[str, Any]]:
    """The system options without which the system would not need a gold program (rag's
    ``reader=oracle``); none when it needs one whatever its options."""
    from ..registry import NEEDS_PROGRAM, registration

    needs = registration("system", config.system).needs
    options = config.effective_system_options()
    return [(k, v) for k, v in options.items()
            if NEEDS_PROGRAM not in needs({o: w for o, w in options.items() if o != k})]


def _over_limit_text(found: Survey, c: Any, tokenizer: str) -> str:
    """The refusal's template (fields marked as in :class:`ConfigFieldError`)."""
    worst_id, worst = max(found.over_limit, key=lambda item: item[1])
    tier = f"tier {literal(c.tier)} " if c.tier else ""
    limit = f"{{max_context_tokens}} {c.max_context_tokens}"
    if c.is_local:
        # lazy: the local provider registers only when used (registry._LAZY)
        from ..models.local import context_tokens

        n_ctx = context_tokens(c.model_options)
        if c.max_context_tokens == n_ctx - c.max_tokens:
            limit = f"{c.max_context_tokens} (n_ctx {n_ctx} minus {{max_tokens}} {c.max_tokens})"
    return (f"the {tier}prompts do not fit the model: {len(found.over_limit)} of the "
            f"{found.prompts_counted} counted are over {limit}, the largest {worst:,} tokens "
            f"(question {literal(worst_id)}), counted with {literal(tokenizer)} before any "
            "request. Use a smaller tier, {overflow} drop-oldest, a retrieval system, or a "
            "larger context ({model_options[n_ctx]}=N for local: models)")


def sizer(probe: Any, overflow: str,
          limit: int | None) -> Callable[[Episode, Question, int], int | None] | None:
    """The prompt counter for the survey: the tokens of a prompt over ``limit`` (None when
    it fits), or None when nothing is to be counted (no limit, drop-oldest, a system whose
    prompt is not its whole history)."""
    if limit is None or overflow != "error" or not isinstance(probe, PromptSizer):
        return None

    def over(episode: Episode, question: Question, cut: int) -> int | None:
        tokens = probe.prompt_tokens(episode.sessions[:cut], question)
        return tokens if tokens is not None and tokens > limit else None

    return over
