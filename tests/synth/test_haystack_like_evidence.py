"""Issue 28: haystack sessions drawn as evidence sessions are, conversations whose replies
answer what was said, few repeated lines, and the seed that failed its own gate."""

from __future__ import annotations

import random
import re
from collections import Counter
from datetime import datetime

import pytest

from memgauge.benchmarks.synth import SynthConfig, generate
from memgauge.benchmarks.synth._haystack import family_session
from memgauge.benchmarks.synth._text import (
    FOLLOW_UPS,
    LEAD_INS,
    SHARE_REPLIES,
    SLOTS,
    TAILS,
    TOPICS,
    SessionPlan,
    TurnPlan,
    as_phrase,
    chat_session,
    limit_repeats,
    line,
    line_key,
    say,
    share_image,
)
from memgauge.validation.synth import gate_episodes, tier_episodes


def _template_regex(template: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\\\{\w+\\\}", ".+?", re.escape(template)) + "$")


def _core(text: str) -> str:
    """A chat line less the lead-in or tail it may carry."""
    for lead in LEAD_INS:
        text = text.removeprefix(f"{lead} ")
    for tail in TAILS:
        text = text.removesuffix(f" {tail}")
    return text


def _answers(user: str, reply: str) -> bool:
    """Whether ``reply`` is the reply written for ``user`` (a topic's pair or a follow-up)."""
    if (user, reply) in FOLLOW_UPS:
        return True
    return any(_template_regex(u).match(user) and _template_regex(a).match(reply)
               for bank in TOPICS.values()
               for u, a in zip(bank["user"], bank["assistant"], strict=True))


def test_every_small_talk_reply_answers_its_user_line():
    """A pet question answered with travel advice (or a parrot with "It is a commitment")
    came from drawing user lines and replies apart."""
    rng = random.Random(28)
    pairs = 0
    for _ in range(300):
        turns = chat_session(rng).turns
        for user, reply in zip(turns[::2], turns[1::2], strict=True):
            assert (user.role, reply.role) == ("user", "assistant")
            assert _answers(_core(user.text), _core(reply.text)), (user.text, reply.text)
            pairs += 1
    assert pairs > 900


def test_a_conversation_keeps_its_slot_values_on_both_sides():
    """"A weekend in Lisbon?" was answered about Kyoto: each side drew its own city."""
    rng = random.Random(5)
    asked = 0
    for _ in range(400):
        session = chat_session(rng, topic="travel")
        text = " ".join(t.text for t in session.turns)
        named = {c for c in SLOTS["city"] if c in text}
        assert named <= {session.slots["city"]}, text  # one trip per conversation
        for user, reply in zip(session.turns[::2], session.turns[1::2], strict=True):
            if "a good time to go" in user.text:
                city = re.search(r"weekend in (\w+)\.", user.text).group(1)
                assert _core(reply.text).startswith(city), (user.text, reply.text)
                asked += 1
    assert asked > 20


def test_limit_repeats_redraws_small_talk_and_image_replies_over_the_cap():
    rng = random.Random(1)
    def share() -> list[TurnPlan]:
        return [TurnPlan("user", "Look at this <image>", images=[("scene", {})]),
                TurnPlan("assistant", SHARE_REPLIES[0], source="share_reply")]

    sessions = [SessionPlan("pets", [*chat_session(random.Random(0), topic="pets",
                                                   n_exchanges=3).turns, *share()])
                for _ in range(5)]  # five copies of one session: every line five times
    counts = limit_repeats(sessions, rng)
    assert Counter(line_key(t.text) for s in sessions for t in s.turns) == counts
    # a line that has no other wording is left alone, whatever the count
    assert counts.pop("look at this") == 5
    assert max(counts.values()) == 2


def test_limit_repeats_says_a_share_line_in_its_other_wordings():
    """A question's or a pool session's share line ("The car has moved, here's where it
    is") said 6 times in a 32k episode: it takes another of its wordings, same slots."""
    rng = random.Random(2)
    sessions = [SessionPlan("pets", share_image(rng, "entity", {}, line=line(
        "collection", kind="mug"))) for _ in range(7)]
    wordings = sessions[0].turns[0].wordings
    assert len(wordings) == 7 and all("mug" in w and "<image>" in w for w in wordings)
    counts = limit_repeats(sessions, rng)
    users = Counter(s.turns[0].text for s in sessions)
    assert set(users) <= set(wordings) and max(users.values()) <= 2 and len(users) >= 4
    assert max(counts.values()) <= 2
    # without its image (a text-only filler) the reworded line has no placeholder either
    bare = [SessionPlan("pets", [TurnPlan("user", "Another photo for my mug collection",
                                          wordings=wordings)]) for _ in range(4)]
    limit_repeats(bare, rng)
    assert not any("<image>" in s.turns[0].text for s in bare)
    assert max(Counter(s.turns[0].text for s in bare).values()) == 2


def test_a_plain_line_keeps_nothing_and_a_phrase_keeps_its_slots():
    # as_phrase: a plain str is a phrase with nothing to keep and no other wordings
    phrase = line("collection", kind="mug")
    assert as_phrase(phrase) is phrase and phrase.keep == ("mug",)
    assert as_phrase("Hello").keep == () and as_phrase("Hello").wordings == ()
    rng = random.Random(1)
    (shared, _) = share_image(rng, "entity", {}, line="Look at this")
    assert shared.text == "Look at this <image>" and shared.keep == () and shared.wordings == ()
    (shared, _) = share_image(rng, "entity", {}, line=phrase)
    assert shared.keep == ("mug",) and len(shared.wordings) == 7
    assert say("user", phrase, keep=("Tuesday",)).keep == ("Tuesday", "mug")
    assert say("user", "plain", keep=("Tuesday",)).keep == ("Tuesday",)


def test_a_pool_session_is_an_evidence_session_of_a_planned_question():
    from memgauge.benchmarks.synth._families import DEFAULT_FAMILIES

    rng = random.Random(3)
    drawn = [family_session(rng, DEFAULT_FAMILIES, with_image=True) for _ in range(300)]
    for session, keys in drawn:
        assert session.role == "haystack" and keys
        assert session.meta["family"] in DEFAULT_FAMILIES  # (the gate's folds) and nothing else
        assert set(session.meta) == {"family"}
        # every evidence session shares an image but ie_entity's article (text only)
        assert any(t.images for t in session.turns) or "I read an article" in str(session)
        assert not any(f.get("needle") for t in session.turns for f in t.facts)
    # Families with several evidence sessions are as common here as among the evidence:
    # collection photos (msr_counting, 3-6 sessions) outnumber a single-session family's.
    collection = sum("collection" in t.text for s, _ in drawn for t in s.turns)
    article = sum("I read an article" in t.text for s, _ in drawn for t in s.turns)
    assert collection > 2 * article > 0
    fillers = [family_session(rng, DEFAULT_FAMILIES, with_image=False)[0] for _ in range(200)]
    assert all(s.role == "filler" and not any(t.images or "<image>" in t.text for t in s.turns)
               for s in fillers)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth") / "b"
    generate(SynthConfig(out=str(out), seed=5, tiers=["4k", "8k"], questions=12))
    return {tier: tier_episodes(out, tier) for tier in ("4k", "8k")}


@pytest.mark.parametrize("tier", ["4k", "8k"])
def test_no_line_more_than_twice_in_an_episode(small, tier):
    """A 4k prompt held one filler line 9 times (issue 28); counted as the validate gate
    counts (case, spacing and image placeholders aside)."""
    from memgauge.validation._gates import repeated_lines

    res = repeated_lines(small[tier])
    assert res.verdict == "PASS" and res.max_count <= 2, res.worst


def test_a_32k_episode_says_no_line_more_than_twice(tmp_path):
    """At 32k (~140 sessions, ~1,500 turns) generator 6 said its commonest line up to 7
    times an episode: the episode now takes a pool session that says no line a third
    time, from a pool three times its need (generator 7, design 0041)."""
    from memgauge.validation._gates import repeated_lines

    generate(SynthConfig(out=str(tmp_path / "b"), seed=5, tiers=["32k"], questions=3))
    episodes = tier_episodes(tmp_path / "b", "32k")
    res = repeated_lines(episodes)
    assert res.verdict == "PASS" and res.max_count == 2, res.worst
    # pool sessions are taken as they are (a copy reworded for an episode has an id of its
    # own): no session id stands for two texts
    texts: dict[str, str] = {}
    for ep in episodes:
        for s in ep.sessions:
            text = " ".join(t.text for t in s.turns)
            assert texts.setdefault(s.session_id, text) == text, s.session_id


def test_whose_screenshot_is_asked_about_is_drawn_so_decoys_carry_no_wording_of_their_own():
    """ie_previnfo's decoy was always "Screenshot of my neighbour's booking from the same
    app": words only decoys said, most of the other sessions at 8k (seed 19, 200
    questions: AUC 0.601). Now evidence says it as often as decoys do."""
    from datetime import date

    from memgauge.benchmarks.synth._families import FAMILIES, When

    rng = random.Random(19)
    said = Counter()
    for _ in range(200):
        plan = FAMILIES["ie_previnfo"].plan(rng, When(date(2025, 10, 1)))
        [evidence], [decoy] = plan.sessions, plan.decoys
        theirs = ["same app" in t.text for t in evidence.turns], [
            "same app" in t.text for t in decoy.turns]
        assert any(theirs[0]) != any(theirs[1])  # one of the two, never both
        if any(theirs[0]):
            assert "my own" not in plan.question and "'s " in plan.question
        else:
            assert "my own" in plan.question
        said["evidence" if any(theirs[0]) else "decoy"] += 1
    assert 70 < said["evidence"] < 130 and said["evidence"] + said["decoy"] == 200


def test_haystack_sessions_are_dated_as_evidence_sessions_are(small):
    """Haystack at any minute of 0-240 days (03:00, the question's own day) was never
    evidence: a model reading the dates could rule it out."""
    def when(stamp: str) -> datetime:
        return datetime.strptime(f"{stamp[:10]} {stamp[-5:]}", "%Y/%m/%d %H:%M")

    hours: dict[str, set[int]] = {"evidence": set(), "other": set()}
    for ep in small["8k"]:
        asked = when(ep.questions[0].question_date).date()
        for s in ep.sessions:
            t = when(s.date)
            assert 8 <= t.hour <= 21 and 2 <= (asked - t.date()).days <= 237, (s.session_id, s.date)
            hours["evidence" if s.meta["role"] == "evidence" else "other"].add(t.hour)
    assert len(hours["other"]) > 10 and hours["evidence"] <= hours["other"]


@pytest.mark.filterwarnings("ignore")
def test_seed_5_passes_its_own_gate_clearly(tmp_path):
    """``generate synth --seed 5 --tiers 8k,32k --questions 60`` gave AUC 0.600, on the
    gate's bound (issue 28); the haystack now talks as the evidence does (generator 6:
    0.442; generator 7: 0.460, interval 0.41-0.52; with a family's once-used haystack held
    out with it: 0.466, 0.41-0.52; the seed table is in bench/RESULTS.md)."""
    pytest.importorskip("sklearn")
    from memgauge.validation import indistinguishability

    generate(SynthConfig(out=str(tmp_path / "b"), seed=5, tiers=["8k", "32k"], questions=60))
    res = indistinguishability(gate_episodes(tier_episodes(tmp_path / "b", "32k")))
    assert res.verdict == "PASS" and abs(res.auc - 0.5) <= 0.08, res.top_features["evidence"][:5]
    low, high = res.auc_interval
    assert low < res.auc < high and high - low < 0.2


_A_BEFORE_VOWEL = re.compile(r"\ba ([aeiou]\w*|8\w*|11\w*|18\w*)", re.IGNORECASE)


def test_no_template_says_a_before_a_vowel_sound_for_any_slot_value():
    """"How often should I water a aloe vera", "a 8-day trip" (generator 7): every chat
    line filled with every value of the slot after its "a", checked for the article."""
    wrong = []
    for topic in TOPICS.values():
        for template in topic["user"] + topic["assistant"]:
            for slot in re.findall(r"\ba \{(\w+)\}", template):
                for value in SLOTS[slot]:
                    text = template.replace("{" + slot + "}", value)
                    if _A_BEFORE_VOWEL.search(text):
                        wrong.append(text)
    assert not wrong, wrong[:5]


def test_a_visitor_line_keeps_the_capitals_of_the_name_it_opens_with(small):
    """str.capitalize turned "my colleague Tom" into "My colleague tom" (generator 7)."""
    from memgauge.benchmarks.synth import _world as W
    from memgauge.benchmarks.synth._text import sentence_start

    owners = [sentence_start(o) for o in W.OWNERS]
    assert "My colleague Tom" in owners and "My friend Maya" in owners
    said = [t.text for eps in small.values() for ep in eps for s in ep.sessions
            for t in s.turns if "came over today" in t.text]
    assert said and all(any(t.startswith(o) for o in owners) for t in said), said[:3]
    assert any(t.startswith(("My colleague Tom", "My friend Maya")) for t in said)  # a name
    names = {n for o in W.OWNERS for n in re.findall(r"\b[A-Z]\w+", o)}  # Tom, Maya
    for text in (t.text for eps in small.values() for ep in eps for s in ep.sessions
                 for t in s.turns):
        assert not any(re.search(rf"\b{n.lower()}\b", text) for n in names), text
