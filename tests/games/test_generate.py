"""``memgauge generate games``: horizon cut, seeds, caps, balance, ids, the folder it writes,
paraphrasing with its consistency check, and the command's errors."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.errors import ConfigError
from memgauge.games import _generate
from memgauge.games._generate import GamesConfig, TemplateError, balance, generate_games
from memgauge.games.templates import GameQuestion, template
from memgauge.models import ScriptedModel

from .gamebench_fixtures import Timeline, register_test_templates, write_trajectory

runner = CliRunner()


@pytest.fixture
def test_templates(monkeypatch):
    return register_test_templates(monkeypatch)


def _generate_to(tmp_path: Path, name: str = "bench", **kw) -> Path:
    traj = tmp_path / "traj-a"
    if not traj.exists():
        write_trajectory(traj)
    out = tmp_path / name
    generate_games(GamesConfig(trajectories=[traj], out=out, make_timeline=Timeline, **kw))
    return out


def _rows(bench: Path) -> list[dict]:
    return [json.loads(line) for line in (bench / "questions.jsonl").read_text().splitlines()]


def test_templates_see_only_steps_up_to_the_horizon(tmp_path, test_templates):
    rows = _rows(_generate_to(tmp_path, horizons=[3, 5]))
    assert sorted(test_templates) == [3, 5, 8]  # each run saw exactly its cut, never later
    last = {r["horizon"][1]: r["answer"] for r in rows if r["template"] == "test.last_step"}
    assert last == {3: 3, 5: 5, 8: 8}
    for r in rows:
        assert all(r["horizon"][0] <= s <= r["horizon"][1] for s in r["evidence_steps"])
        if r["template"] == "test.wood_at":
            assert r["params"]["step"] <= r["horizon"][1]


def test_same_inputs_and_seed_give_the_same_bytes(tmp_path, test_templates):
    a = _generate_to(tmp_path, "a", seed=3, horizons=[4])
    b = _generate_to(tmp_path, "b", seed=3, horizons=[4])
    for name in ("questions.jsonl", "benchmark.json", "trajectories/traj-a/trajectory.jsonl"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    others = [_rows(_generate_to(tmp_path, f"s{s}", seed=s, horizons=[4])) for s in range(1, 6)]
    picked = {tuple(r["id"] + json.dumps(r["params"]) for r in rows) for rows in others}
    assert len(picked) > 1  # the seed chooses which of the capped questions are kept


def test_cap_and_deduplication_per_trajectory_horizon_and_template(tmp_path, test_templates):
    rows = _rows(_generate_to(tmp_path, max_per_template=2, horizons=[5]))
    per = {}
    for r in rows:
        per.setdefault((r["horizon"][1], r["template"]), []).append(r)
    # test.diamond and test.twice ask one question with one answer at each horizon: over
    # the benchmark a constant would win them, so one of each is kept (design 0039); the
    # cap also took a repeated wood count from the full trajectory
    assert {k: len(v) for k, v in per.items()} == {
        (5, "test.diamond"): 1, (5, "test.last_step"): 1, (5, "test.twice"): 1,
        (5, "test.wood_at"): 2, (8, "test.last_step"): 1, (8, "test.wood_at"): 1}
    keys = [(r["trajectory"], r["horizon"][1], r["template"], json.dumps(r["params"]))
            for r in rows]
    assert len(keys) == len(set(keys))


def test_window_phrase_and_stable_ids(tmp_path, test_templates):
    rows = _rows(_generate_to(tmp_path, horizons=[4]))
    for r in rows:
        assert r["question"] == f"Considering only steps 1–{r['horizon'][1]} of your play: " \
            + r["text"]
        assert re.fullmatch(rf"traj-a-h{r['horizon'][1]}-{re.escape(r['template'])}-\d+",
                            r["id"])
    assert len({r["id"] for r in rows}) == len(rows)
    na = [r for r in rows if r["template"] == "test.diamond"]
    assert na and all(not r["answerable"] and r["answer"] == "not answerable" for r in na)


def _q(template_id: str, ability: str, k: int) -> GameQuestion:
    return GameQuestion(template=template_id, params={"k": k}, ability=ability,
                        answer_type="integer", answer=k, evidence_steps=[1], horizon=(1, 5),
                        text=f"q{k}")


def test_balance_cuts_an_ability_to_twice_the_median_round_robin():
    by_template = {"a.one": [_q("a.one", "single_hop", k) for k in range(6)],
                   "a.two": [_q("a.two", "single_hop", k) for k in range(4)],
                   "b": [_q("b", "temporal", k) for k in range(2)],
                   "c": [_q("c", "spatial", k) for k in range(3)]}
    out = balance(by_template)
    # median of (10, 2, 3) is 3: single_hop keeps 6, taken from the larger template first
    assert {t: len(v) for t, v in out.items()} == {"a.one": 3, "a.two": 3, "b": 2, "c": 3}
    assert [q.params["k"] for q in out["a.one"]] == [0, 1, 2]  # the first ones stay


def test_benchmark_json_and_the_copied_trajectory(tmp_path, test_templates):
    bench = _generate_to(tmp_path, seed=5, horizons=[4])
    info = json.loads((bench / "benchmark.json").read_text())
    traj = tmp_path / "traj-a"
    assert info["format"] == "memgauge.games-bench/1"
    assert info["seed"] == 5 and info["options"]["horizons"] == [4]
    [entry] = info["trajectories"]
    assert entry["id"] == "traj-a" and entry["env"] == "crafter" and entry["steps"] == 8
    assert entry["sha256"] == hashlib.sha256((traj / "trajectory.jsonl").read_bytes()).hexdigest()
    rows = _rows(bench)
    assert info["counts"]["questions"] == len(rows)
    assert info["counts"]["per_ability"]["adversarial"] == 1  # "not answerable" twice: capped
    assert info["counts"]["answerable_share"] == round(
        sum(r["answerable"] for r in rows) / len(rows), 4)
    frames = sorted((traj / "frames").iterdir())
    copied = sorted((bench / "trajectories" / "traj-a" / "frames").iterdir())
    assert [f.name for f in frames] == [f.name for f in copied]
    assert frames[0].stat().st_ino == copied[0].stat().st_ino  # hard-linked, same disk


def test_horizon_past_the_trajectory_asks_about_the_whole_trajectory_and_says_so(
        tmp_path, test_templates):
    """A game can be won before --horizon N (issue 24: the README's TextWorld game ends at
    step 5): its questions cover the whole trajectory, recorded in benchmark.json."""
    bench = _generate_to(tmp_path, horizons=[4, 9, 50])
    assert sorted(test_templates) == [4, 8]  # 9 and 50 cut nothing beyond the whole 8 steps
    assert {tuple(r["horizon"]) for r in _rows(bench)} == {(1, 4), (1, 8)}
    [entry] = json.loads((bench / "benchmark.json").read_text())["trajectories"]
    assert entry["horizons"] == [4, 8] and entry["horizons_past_end"] == [9, 50]
    inside = _generate_to(tmp_path, "inside", horizons=[4])
    [entry] = json.loads((inside / "benchmark.json").read_text())["trajectories"]
    assert "horizons_past_end" not in entry  # only when there is one: old bytes unchanged


def test_a_template_that_breaks_the_contract_is_named(tmp_path, test_templates):
    @template("test.leaky", ability="single_hop", answer_type="integer", games=("crafter",))
    def leaky(tl, rng):
        yield GameQuestion(template="test.leaky", params={}, ability="single_hop",
                           answer_type="integer", answer=1, evidence_steps=[tl.last + 1],
                           horizon=(1, tl.last), text="?")

    with pytest.raises(TemplateError, match=r"horizon 8, template test.leaky: evidence_steps"):
        _generate_to(tmp_path)


def test_paraphrase_kept_only_when_numbers_and_entities_survive(tmp_path, test_templates):
    def reword(messages, qid):
        text = messages[-1].parts[0].text
        if "wood" in text:  # drops the step number: must be refused
            return "How much wood did you hold back then?"
        if "diamond" in text:  # keeps 'diamond' and has no number to lose
            return "When did you first pick up 'diamond'?"
        return "Please say: " + text

    bench = _generate_to(tmp_path, paraphraser=ScriptedModel(fn=reword))
    rows = _rows(bench)
    for r in rows:
        p = r["paraphrase"]
        if r["template"] == "test.wood_at":
            assert p["status"] == "rejected" and "numbers" in p["why"]
            assert r["text"] == p["original"]
        else:
            assert p["status"] == "kept" and r["text"] != p["original"]
        assert r["question"].endswith(r["text"]) and r["question"].startswith("Considering")
    info = json.loads((bench / "benchmark.json").read_text())["options"]["paraphrase"]
    assert info["rejected"] == sum(r["template"] == "test.wood_at" for r in rows)


def test_cli_writes_the_folder_and_refuses_a_non_empty_out(tmp_path, test_templates,
                                                           monkeypatch):
    monkeypatch.setattr(_generate, "default_timeline", Timeline)
    traj = write_trajectory(tmp_path / "t1")
    out = tmp_path / "bench"
    res = runner.invoke(app, ["generate", "games", str(traj), "--out", str(out),
                              "--horizon", "4", "--max-per-template", "1"])
    assert res.exit_code == 0, res.output
    assert "questions from 1 trajectories" in res.output
    assert len(_rows(out)) == json.loads((out / "benchmark.json").read_text())["counts"][
        "questions"]
    again = runner.invoke(app, ["generate", "games", str(traj), "--out", str(out)])
    assert again.exit_code == 2 and "not empty" in again.output
    assert "Traceback" not in again.output
    forced = runner.invoke(app, ["generate", "games", str(traj), "--out", str(out),
                                 "--overwrite"])
    assert forced.exit_code == 0, forced.output
    past = runner.invoke(app, ["generate", "games", str(traj), "--out", str(tmp_path / "x"),
                               "--horizon", "20"])
    assert past.exit_code == 0, past.output
    assert ("t1 ends at step 8: --horizon 20 is past its end, so its questions cover the "
            "whole trajectory (steps 1–8)") in " ".join(past.output.split())


def test_overwrite_never_deletes_a_folder_that_is_not_a_games_benchmark(tmp_path,
                                                                         test_templates):
    out = tmp_path / "bench"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="does not hold a games benchmark"):
        _generate_to(tmp_path, overwrite=True)
    assert (out / "notes.txt").read_text() == "mine"


def test_cli_paraphrase_through_an_endpoint_is_cached(tmp_path, test_templates, monkeypatch):
    from helpers.scripted_server import ScriptedServer, completion

    monkeypatch.setattr(_generate, "default_timeline", Timeline)
    traj = write_trajectory(tmp_path / "t1")

    def reply(body):
        return 200, completion("Kindly tell me: " + body["messages"][-1]["content"])

    args = ["generate", "games", str(traj), "--max-per-template", "1", "--paraphrase",
            "openai:m"]
    with ScriptedServer([], after=reply) as srv:
        first = runner.invoke(app, [*args, "--paraphrase-base-url", srv.base_url, "--out",
                                    str(tmp_path / "a")])
        sent = len(srv.requests)
        second = runner.invoke(app, [*args, "--paraphrase-base-url", srv.base_url, "--out",
                                     str(tmp_path / "b")])
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    rows = _rows(tmp_path / "a")
    assert sent == len(rows) and len(srv.requests) == sent  # the rerun came from the cache
    assert all(r["paraphrase"]["status"] == "kept" for r in rows)
    assert all(r["text"].startswith("Kindly tell me: ") for r in rows)
    assert (tmp_path / "a" / "questions.jsonl").read_bytes() == \
        (tmp_path / "b" / "questions.jsonl").read_bytes()
    assert "paraphrased: 4 kept" in first.output


def test_a_template_that_fails_is_named_not_a_traceback(tmp_path, test_templates,
                                                        monkeypatch):
    @template("test.needs_view", ability="spatial", answer_type="string", games=("crafter",))
    def needs_view(tl, rng):
        yield from (s.view[0][0] for s in tl.steps)  # this trajectory logged no view

    with pytest.raises(TemplateError, match=r"trajectory traj-a, horizon 8, template "
                                            r"test.needs_view failed: TypeError"):
        _generate_to(tmp_path)
    monkeypatch.setattr(_generate, "default_timeline", Timeline)
    res = runner.invoke(app, ["generate", "games", str(tmp_path / "traj-a"), "--out",
                              str(tmp_path / "cli")])
    assert res.exit_code == 2 and "test.needs_view failed" in res.output
    assert "Traceback" not in res.output


def test_configuration_mistakes_are_caught_before_anything_is_written(tmp_path,
                                                                      test_templates):
    a = write_trajectory(tmp_path / "x" / "same")
    b = write_trajectory(tmp_path / "y" / "same")
    odd = write_trajectory(tmp_path / "odd", env="pong")
    out = tmp_path / "bench"
    cases = [({"trajectories": [a], "max_per_template": 0}, "--max-per-template 0"),
             ({"trajectories": [a], "horizons": [0]}, "--horizon 0"),
             ({"trajectories": [a, b]}, "both named 'same'"),
             ({"trajectories": [odd]}, "env 'pong' has no templates"),
             ({"trajectories": []}, "at least one trajectory")]
    for kw, match in cases:
        with pytest.raises(ConfigError, match=match):
            generate_games(GamesConfig(out=out, make_timeline=Timeline, **kw))
        assert not out.exists()


def test_text_questions_naming_what_was_never_shown_are_dropped_and_counted(tmp_path):
    """Design 0039: an item held from the start but never named in any text cannot be
    asked about; the generator drops such questions and benchmark.json says how many."""
    from memgauge.games import Step, TrajectoryMeta, TrajectoryWriter

    writer = TrajectoryWriter(tmp_path / "traj", TrajectoryMeta(env="textworld", player="x"))
    writer.start({"room": "Kitchen", "inventory": ["brass key"], "score": 0,
                  "observation": "-= Kitchen =- A bare room.", "admissible": ["unlock door"]})
    for t, (action, obs) in enumerate([("look", "-= Kitchen =- A bare room."),
                                       ("take lamp", "You take the lamp."),
                                       ("look", "-= Kitchen =- Still bare.")], 1):
        inv = ["brass key"] + (["lamp"] if t >= 2 else [])
        writer.add(Step(step=t, action=action, room="Kitchen", inventory=inv, score=0,
                        observation=obs, admissible=["unlock door"],
                        player={"reason": "walkthrough 2/5"}))
    writer.finish(end="step_cap")
    info = generate_games(GamesConfig([tmp_path / "traj"], tmp_path / "bench",
                                      max_per_template=50))
    rows = [json.loads(line) for line in (tmp_path / "bench" / "questions.jsonl").open()]
    assert rows and not any("brass key" in json.dumps(r) for r in rows if r["answerable"])
    assert not any("walkthrough" in json.dumps(r) or "unlock" in json.dumps(r) for r in rows)
    dropped = info["view_check"]["dropped"]
    assert dropped.get("text.inventory_at_step", 0) >= 1 and dropped.get("text.has_item", 0) >= 1
    assert any(r["template"] == "text.has_item" and r["params"]["item"] == "lamp" for r in rows)


def _closed(answers: list[str]) -> list[GameQuestion]:
    return [GameQuestion(template="t", params={"i": i}, ability="logical",
                         answer_type="yes_no", answer=a, evidence_steps=[], horizon=(1, 9),
                         text=f"q{i}", answerable=a != "not answerable")
            for i, a in enumerate(answers)]


def test_closed_answers_keep_each_value_at_thirty_percent_or_nothing():
    """Design 0039: two random steps asked "could you craft it?" were "no" 44 of 44 times;
    the balance keeps each value at >= 30 %, and a one-sided horizon keeps nothing."""
    import random

    from memgauge.games._generate import MIN_VALUE_SHARE, balanced_choice

    qs = _closed(["no"] * 20 + ["yes"] * 2)
    for seed in range(5):
        kept = [qs[i].answer for i in balanced_choice(qs, ("yes", "no"), 6, random.Random(seed))]
        assert kept.count("yes") == 2 and len(kept) == 6
        assert min(kept.count(v) for v in ("yes", "no")) >= MIN_VALUE_SHARE * len(kept)
    assert balanced_choice(_closed(["no"] * 9), ("yes", "no"), 6, random.Random(0)) == set()
    few = _closed(["no"] * 9 + ["yes"] * 9 + ["not answerable"])  # a scarce NA throttles nothing
    kept = [few[i].answer for i in balanced_choice(few, ("yes", "no"), 7, random.Random(0))]
    assert len(kept) == 7 and kept.count("not answerable") == 1


def test_generation_balances_a_closed_template_and_says_so(tmp_path, test_templates):
    @template("test.had_wood", ability="logical", answer_type="yes_no", games=("crafter",))
    def had_wood(tl: Timeline, rng) -> Any:  # "no" at most steps of the fixture
        for s in tl.steps:
            yield tl.question("test.had_wood", "logical", "yes_no", {"step": s.step},
                              "yes" if s.inventory["wood"] >= 3 else "no",
                              f"Did you have 3 wood after step {s.step}?", [s.step])

    out = _generate_to(tmp_path, horizons=[6], max_per_template=4)
    rows = [r for r in _rows(out) if r["template"] == "test.had_wood"]
    info = json.loads((out / "benchmark.json").read_text())
    entry = info["answer_balance"]["templates"]["test.had_wood"]
    assert entry["one_sided"] == 1 and entry["offered"] == {"no": 13, "yes": 1}
    # the full trajectory only; the ability cut (logical: 3 > 2) took a "no", not the "yes"
    assert sorted(r["answer"] for r in rows) == ["no", "yes"]
    assert {r["horizon"][1] for r in rows} == {8}
    assert info["generator_version"] == "3"


def test_a_repeated_unshown_question_is_dropped_and_counted_once(tmp_path, test_templates):
    @template("test.ghost", ability="single_hop", answer_type="string", games=("text",))
    def ghost(tl: Timeline, rng) -> Any:
        for _ in range(3):  # the same question three times; "ghost" is in no text
            yield tl.question("test.ghost", "single_hop", "string", {"item": "ghost"},
                              "ghost", "Which item haunted you?", [1])
        yield tl.question("test.ghost", "single_hop", "string", {"item": "obs"},
                          f"obs {tl.last}", "What was the last reply?", [1])  # shown: kept

    traj = write_trajectory(tmp_path / "traj-t", env="textworld")
    info = generate_games(GamesConfig(trajectories=[traj], out=tmp_path / "bench",
                                      make_timeline=Timeline, horizons=[4]))
    assert info["view_check"]["dropped"] == {"test.ghost": 2}  # once per horizon (4 and 8)
    assert [r["answer"] for r in _rows(tmp_path / "bench")] == ["obs 4", "obs 8"]


def _open(answers: list, template_id: str = "t") -> list[GameQuestion]:
    return [GameQuestion(template=template_id, params={"i": i}, ability="temporal",
                         answer_type="integer", answer=a, evidence_steps=[], horizon=(1, 9),
                         text=f"q{i}", answerable=a != "not answerable")
            for i, a in enumerate(answers)]


def test_an_open_template_samples_every_answer_value_it_offers():
    """A plain random sample of a mostly-0 score was mostly 0 (`text.score_after_step`: 0
    right 97 %); the round-robin over answer values keeps the rare ones."""
    import random

    from memgauge.games._generate import spread_choice

    qs = _open([0] * 20 + [1, 2])
    for seed in range(8):
        kept = sorted(qs[i].answer for i in spread_choice(qs, 6, random.Random(seed)))
        assert kept == [0, 0, 0, 0, 1, 2]
    assert len(spread_choice(qs, 30, random.Random(0))) == 22


def test_one_trajectory_and_horizon_keeps_no_constant_over_chance_plus_ten_points():
    from memgauge.games._generate import GenerationReport, cap_per_horizon

    report = GenerationReport()
    out = cap_per_horizon({"a": _open([0] * 6, "a"), "b": _open([0, 0, 0, 0, 1, 2], "b"),
                           "c": _open([1, 2, 3, 0, 1, 2], "c")}, report)
    assert [q.answer for q in out["a"]] == [0]  # never varies here: one question, not six
    # b: k = 3, so "0" may answer floor(0.433 n) questions: 0, 0, 1, 2 (2 of 4 is 50 %: cut)
    assert sorted(q.answer for q in out["b"]) == [0, 1, 2]
    assert len(out["c"]) == 6  # 2 of 6 against 1/4 + 10 points
    assert report.cut_per_horizon == {"a": {"questions": 5, "horizons": 1},
                                      "b": {"questions": 3, "horizons": 1}}


def test_an_adversarial_template_is_capped_with_its_answerable_twin(monkeypatch):
    from memgauge.games._generate import cap_per_horizon
    from memgauge.games.templates import _base

    monkeypatch.setattr(_base, "_TEMPLATES", {})
    template("t.adv", ability="adversarial", answer_type="integer", games=("text",),
             twin="t.twin")(lambda tl, rng: iter(()))
    template("t.twin", ability="spatial", answer_type="integer", games=("text",))(
        lambda tl, rng: iter(()))
    adversarial = _open(["not answerable"] * 2, "t.adv")
    assert len(cap_per_horizon({"t.adv": adversarial})["t.adv"]) == 1  # alone: a constant
    out = cap_per_horizon({"t.adv": adversarial, "t.twin": _open([1, 2, 1, 2, 3, 3], "t.twin")})
    # with its twin k = 4, and any one answer may be right for floor(0.35 * 8) = 2 of 8
    assert len(out["t.adv"]) == 2 and len(out["t.twin"]) == 6


def test_generated_benchmark_passes_the_constant_answer_gate_and_says_what_it_cut(
        tmp_path, test_templates):
    """A mostly-0 score asked at every step (as `text.score_after_step` was): every
    template family's best constant is at most chance + 10 points over the benchmark."""
    from types import SimpleNamespace

    from memgauge.validation._game_gates import constant_answer_gate

    @template("test.score", ability="spatial", answer_type="integer", games=("crafter",))
    def score(tl: Timeline, rng) -> Any:  # spatial: an ability of its own, not cut here
        for s in tl.steps:
            yield tl.question("test.score", "spatial", "integer", {"step": s.step},
                              int(s.step == 8), f"What was your score after step {s.step}?",
                              [s.step])

    for name in ("traj-a", "traj-b"):
        write_trajectory(tmp_path / name)
    info = generate_games(GamesConfig([tmp_path / "traj-a", tmp_path / "traj-b"],
                                      tmp_path / "bench", make_timeline=Timeline,
                                      horizons=[3, 5], max_per_template=6))
    rows = [SimpleNamespace(**r) for r in _rows(tmp_path / "bench")]
    gate = constant_answer_gate(rows, {})
    for tid, t in gate["templates"].items():  # one question alone is no constant exploited
        assert t["accuracy"] <= t["chance"] + 0.1 + 1e-9 or t["n"] == 1, (tid, t)
    answers = sorted(r.answer for r in rows if r.template == "test.score")
    # the 1s exist only at step 8 of each trajectory; 28 questions sampled, 8 left after
    # each horizon's cap (one 0 at horizons 3 and 5, a 0 and the 1 at 8), 5 over both
    assert answers == [0, 0, 0, 1, 1]
    cap = info["answer_balance"]["constant_cap"]
    assert cap["open_templates"]["test.score"] == {"offered": 32, "sampled": 28}
    assert cap["cut_per_horizon"]["test.score"] == {"questions": 20, "horizons": 6}
    assert cap["cut_over_benchmark"]["test.score"] == 3


def test_horizon_help_and_readme_say_the_same():
    """One truth (issue 24: the help said the whole trajectory is asked too, the README that
    --horizon N asks about steps 1..N only)."""
    from pathlib import Path

    res = runner.invoke(app, ["generate", "games", "--help"], terminal_width=200)
    help_text = " ".join(res.output.replace("│", " ").split())
    guide = Path(__file__).resolve().parents[2] / "docs" / "guide" / "games.md"
    readme = " ".join(guide.read_text(encoding="utf-8").split())  # the README's games section
    for text in (help_text, readme):
        assert "whole trajectory is always asked about" in text
        assert "ends before step N is asked about whole" in text
