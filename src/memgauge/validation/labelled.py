"""``memgauge validate --bench NAME --data PATH``: the gates of a labelled benchmark (0036).

Every gate is a run of a clue-view system (``systems/clue_views.py``) through the normal
runner, its folder under ``OUT/<gate>``, so a gate's answers are records like any other:

- shortcut audits, each hiding what it must hide, must stay near chance (the binomial upper
  95 % limit): options-only, question-only, clue-text-only (the gold clue rounds' text, no
  images, no captions), minimal-caption (each clue image as a one-line caption);
- oracle screening: the gold clue rounds with their images; flags what the oracle misses;
- Caption-Proof: the same answerer on the gold clues with dense captions (the data's, or
  ``--captioner`` with the dense prompt), task-aware captions (``--captioner`` with the task
  prompt) and native images; the images' gain by X level.

With ``--model none:`` (the default) the audits use the offline word-overlap baseline and
the gates that need a model that sees images are skipped, saying so. A ``local:`` model
without a projector (``--model-option mmproj=FILE``) cannot see images either, which is
known before any request: oracle screening is skipped and Caption-Proof runs its caption
arms only (their accuracy by X level, no gain), said before the first audit.
Results: ``OUT/gates.json`` and ``OUT/gates.md``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..benchmarks import BenchmarkOptions, TakesOptions
from ..errors import ConfigError
from ..models.local import checked_options
from ..registry import lookup
from ..report._gates_md import render_labelled_markdown
from ..runner import RunConfig, Runner, read_records
from ._gates import overall_verdict
from ._labelled_gates import caption_proof_gain, chance_gate, oracle_screening


@dataclass(frozen=True)
class Variant:
    system: str
    context_mode: str
    system_options: dict[str, str] = field(default_factory=dict)
    captioner_prompt: str | None = None  # None: no captioner (the data's captions)


AUDITS = {
    "options-only": Variant("shortcut-options", "text"),
    "question-only": Variant("shortcut-question", "text"),
    "clue-text-only": Variant("clue-all", "text"),
    "minimal-caption": Variant("clue-all", "caption", {"caption": "minimal"}),
}
ORACLE = Variant("clue-all", "image")
CAPTION_ARMS = {"dense": Variant("clue-all", "caption", captioner_prompt="dense"),
                "task": Variant("clue-all", "caption", captioner_prompt="task"),
                "image": ORACLE}


@dataclass(frozen=True)
class LabelledValidation:
    bench: str
    data: str
    out: Path
    model: str = "none:"
    base_url: str | None = None
    model_options: dict[str, str] = field(default_factory=dict)
    image_dir: str | None = None
    bench_options: dict[str, str] = field(default_factory=dict)
    captioner: str | None = None
    captioner_base_url: str | None = None
    captioner_model_options: dict[str, str] = field(default_factory=dict)
    concurrency: int = 8
    max_tokens: int | None = None  # per answer; None: the run's default
    allow_inconsistent: bool = False  # --allow-inconsistent: warnings, not errors

    @property
    def offline(self) -> bool:
        return self.model.startswith("none:")

    @property
    def blind(self) -> str | None:
        """Why the answerer cannot see images, where that is known before any request (an
        endpoint's vision shows only when asked: a refusal there stops the run at once)."""
        if self.offline:
            return "needs --model: a model that sees images (the offline baseline cannot)"
        if self.model.startswith("local:") and not self.model_options.get("mmproj"):
            return (f"needs a model that sees images: {self.model} has no projector (a "
                    "text-only GGUF; a VLM GGUF takes --model-option mmproj=FILE)")
        return None

    @property
    def prompted_captioner(self) -> bool:
        """A captioner that takes the dense / task prompt (a VLM), not gold, ocr or file."""
        return (self.captioner or "").startswith(("openai:", "local:"))


def default_out(data: str) -> Path:
    path = Path(data)
    return (path if path.is_dir() else path.parent) / "validation"


def _check(v: LabelledValidation) -> dict[str, str]:
    """The benchmark loads with these options (a mistake fails before any request); the
    options the runs use: only the multiple-choice form where the loader can keep it."""
    bench = lookup("benchmark", v.bench)(BenchmarkOptions(
        data=v.data, image_dir=v.image_dir, allow_inconsistent=v.allow_inconsistent,
        extra=dict(v.bench_options)))
    # The caption arms run last: a local captioner's mistakes must not wait for them.
    if (v.captioner or "").startswith("local:"):
        checked_options(v.captioner_model_options, "captioner_model_options")
        if not v.captioner_model_options.get("mmproj"):
            raise ConfigError(f"--captioner {v.captioner} cannot see images without its "
                              "projector: give --captioner-model-option mmproj=FILE")
    elif v.captioner_model_options:
        raise ConfigError("--captioner-model-option applies to a local: captioner only")
    options = dict(v.bench_options)
    declared = (bench.options if isinstance(bench, TakesOptions) else None) or {}
    if "mcq" in declared.get("format", ()) and "format" not in options:
        options["format"] = "mcq"  # the audits score options; open questions would be spent
    return options


def _run(v: LabelledValidation, name: str, variant: Variant, options: dict[str, str]
         ) -> list[Any]:
    out = v.out / name
    captioner = v.captioner if variant.captioner_prompt else None
    # RunConfig's own default stands unless the validation sets a cap
    max_tokens: dict[str, Any] = {"max_tokens": v.max_tokens} if v.max_tokens is not None else {}
    Runner(RunConfig(
        bench=v.bench, data=v.data, image_dir=v.image_dir, out=str(out), system=variant.system,
        system_options=dict(variant.system_options), model=v.model, base_url=v.base_url,
        model_options=dict(v.model_options), allow_inconsistent=v.allow_inconsistent,
        context_mode=variant.context_mode, bench_options=options, captioner=captioner,
        captioner_base_url=v.captioner_base_url if captioner else None,
        captioner_model_options=dict(v.captioner_model_options) if captioner else {},
        captioner_prompt=variant.captioner_prompt or "dense", concurrency=v.concurrency,
        **max_tokens,
        cache=not v.offline, progress=False)).run_sync()
    return list(read_records(out).values())


def validate_labelled(v: LabelledValidation,
                      progress: Callable[[str], None] | None = None) -> dict[str, Any]:

    if v.bench == "synth":
        raise ConfigError("synth is validated by `memgauge validate DIR` (its own gates)")
    say = progress or (lambda msg: None)
    options = _check(v)
    results: dict[str, Any] = {"benchmark": {"name": v.bench, "data": v.data,
                                             "model": v.model},
                               "audits": {}}
    blind = v.blind
    if blind and not v.offline:
        say(f"oracle screening and Caption-Proof's image arm skipped: {blind}")
    for name, variant in AUDITS.items():
        say(f"shortcut audit: {name}")
        results["audits"][name] = chance_gate(name, _run(v, name, variant, options)).to_dict()
    if v.offline:
        results["oracle_screening"] = {"skipped": blind}
        results["caption_proof"] = {"skipped": blind}
    else:
        arms: dict[str, list[Any]] = {}
        if blind:
            results["oracle_screening"] = {"skipped": blind}
        else:
            say("oracle screening")
            arms["image"] = _run(v, "oracle", ORACLE, options)
            results["oracle_screening"] = oracle_screening(arms["image"])
        for arm in ("dense", "task"):
            if arm == "task" and not v.prompted_captioner:
                continue
            say(f"caption-proof: {arm} captions")
            variant = CAPTION_ARMS[arm]
            if v.captioner is None:
                variant = Variant(variant.system, variant.context_mode)
            arms[arm] = _run(v, f"caption-{arm}", variant, options)
        results["caption_proof"] = caption_proof_gain(arms)
        if blind:
            results["caption_proof"]["image_arm"] = f"skipped: {blind}"
        if not v.prompted_captioner:
            dense = ("the data's captions" if v.captioner is None
                     else f"the {v.captioner} captioner's")
            results["caption_proof"]["note"] = (
                f"dense = {dense}; task-aware captions need --captioner openai:MODEL or "
                "local:GGUF with --captioner-model-option mmproj=FILE (a captioner that "
                "sees images and takes the task prompt)")
    results.update(overall_verdict(results["audits"]))
    v.out.mkdir(parents=True, exist_ok=True)
    (v.out / "gates.json").write_text(json.dumps(results, indent=2, sort_keys=True,
                                                 default=str) + "\n", encoding="utf-8")
    (v.out / "gates.md").write_text(render_labelled_markdown(results), encoding="utf-8")
    return results


def validate_from_cli(bench: str, data: str | None, *, model: str, base_url: str | None,
                      model_options: dict[str, str], max_tokens: int | None = None,
                      image_dir: str | None, bench_options: dict[str, str],
                      captioner: str | None, captioner_base_url: str | None, out: str | None,
                      captioner_model_options: dict[str, str] | None = None,
                      allow_inconsistent: bool = False,
                      progress: Callable[[str], None]) -> tuple[dict[str, Any], Path]:
    """``memgauge validate --bench NAME --data PATH``: the results and the Markdown file."""
    if not data:
        raise ConfigError(f"validate --bench {bench} needs --data PATH")
    v = LabelledValidation(bench=bench, data=data, out=Path(out) if out else default_out(data),
                           model=model, base_url=base_url, model_options=model_options,
                           max_tokens=max_tokens, image_dir=image_dir,
                           bench_options=bench_options, captioner=captioner,
                           captioner_base_url=captioner_base_url,
                           captioner_model_options=captioner_model_options or {},
                           allow_inconsistent=allow_inconsistent)
    return validate_labelled(v, progress), v.out / "gates.md"
