"""LoCoMo (snap-research/locomo): very long two-person conversations, many questions each.

``--data`` is one conversation file, a folder of them (every ``*.json``, in natural order), or
the combined ``locomo10.json`` (a JSON list of conversations). The session keys may sit at the
top level (the per-conversation files) or under ``conversation`` (the combined release).

Shared photos are recorded, never fetched: an :class:`ImageRef` with the first ``img_url``
(if any), ``path=None`` and the BLIP caption as its ``generic`` caption.

Category 5 questions are adversarial: they ask about something never said, so the right
answer is to say it was not mentioned (answer type ``refusal``).

LoCoMo gives no question dates. ``--bench-option asked_after=evidence`` asks each question right
after its latest evidence session (``D3:5`` is session 3), so ``--protocol online`` answers it
with only the sessions up to there; adversarial questions and questions without evidence stay
at the end. The default, ``asked_after=end``, asks every question after the last session, as
earlier versions did (design 0029).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import ijson

from .._json_limits import BoundedStream, LimitExceeded
from ..errors import ConfigError, InputError
from ..io import HashingReader, file_sha256, iter_json_items, read_id_list
from ..media import ImageTooLarge, inline_image
from ..registry import benchmark
from ..schema import (
    Ability,
    AnswerType,
    BenchmarkInfo,
    Episode,
    EvidenceRef,
    ImageRef,
    Question,
    Session,
    Turn,
)
from ._base import BenchmarkOptions, Inconsistencies, inferred_labels
from ._parse import type_name
from ._streaming import build_image, build_session, build_turn

LOADER_VERSION = "1"
ADVERSARIAL_GOLD = "Not mentioned in the conversation"

CATEGORIES = {
    1: Ability.MULTI_HOP,
    2: Ability.TEMPORAL_REASONING,
    3: Ability.OPEN_DOMAIN,
    4: Ability.SINGLE_HOP,
    5: Ability.ADVERSARIAL,
}

_SESSION_RE = re.compile(r"^session_(\d+)$")
_DATE_RE = re.compile(r"^session_(\d+)_date_time$")
_DIA_RE = re.compile(r"^D:?(\d+):(\d+)$")  # also takes the typo "D:11:26"
_DIA_SESSION_RE = re.compile(r"^D:?(\d+)(?::|$)")  # the session a broken pointer names
_SPLIT_RE = re.compile(r"[;,\s]+")
_TURN_KEYS = {"speaker", "dia_id", "text", "img_url", "blip_caption", "query", "re-download"}
# --bench-option asked_after=...: when a question is asked (the first is the default)
ASKED_AFTER = ("end", "evidence")


def _asked_after_option(extra: dict[str, Any]) -> str:
    unknown = sorted(set(extra) - {"asked_after"})
    if unknown:
        raise ConfigError(f"--bench-option {unknown[0]}: locomo takes only asked_after "
                          f"({' | '.join(ASKED_AFTER)})")
    value = str(extra.get("asked_after", ASKED_AFTER[0]))
    if value not in ASKED_AFTER:
        raise ConfigError(f"--bench-option asked_after={value!r}: use one of "
                          f"{', '.join(ASKED_AFTER)}")
    return value


def _after_latest_evidence(q: Question, index: dict[str, int]) -> int | None:
    """The index of the latest session holding q's evidence; None (asked at the end) for
    adversarial questions, which no session answers, and questions without evidence."""
    if q.answer_type is AnswerType.REFUSAL or not q.evidence:
        return None
    return max(index[e.session_id] for e in q.evidence)


def pointers_that_move(q: Question, index: dict[str, int]) -> list[str]:
    """The evidence pointers to no turn that could change when ``q`` is asked under
    ``asked_after=evidence``: all but those naming a session no later than its latest
    readable evidence (whatever turn they meant, the question is asked there). Without a
    readable one the question would be asked at the end, and a pointer to a later session
    (``D19:40`` where D19 has 30 turns) might be its latest evidence."""
    if q.answer_type is AnswerType.REFUSAL:  # asked at the end whatever its evidence
        return []
    out = []
    for token in q.meta.get("bad_evidence", []):
        m = _DIA_SESSION_RE.match(token) if type(token) is str else None
        session = index.get(f"session_{int(m.group(1))}") if m else None
        if q.asked_after is None or session is None or session > q.asked_after:
            out.append(str(token))
    return out


def _natural_key(path: Path) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path.name)]


def _iter_conversations(reader: HashingReader) -> Iterator[tuple[int, Any]]:
    """A JSON list (or ``{"data": [...]}``, or JSON Lines) of conversations, or one
    conversation object. Streams the list forms; a single conversation is one object."""
    head = reader._f.peek(64) if hasattr(reader._f, "peek") else b""  # type: ignore[attr-defined]
    if head.lstrip()[:1] != b"{" or Path(reader.path).suffix in (".jsonl", ".ndjson"):
        yield from iter_json_items(reader)
        return
    try:
        root = next(iter(ijson.items(BoundedStream(reader), "", use_float=True)), None)
    except LimitExceeded as exc:
        raise InputError(str(exc), file=reader.path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"file is not valid UTF-8 ({exc.reason} at byte {exc.start})",
                         file=reader.path) from None
    except ijson.JSONError as exc:
        msg = str(exc)
        if any(w in msg.lower() for w in ("utf-8", "utf8", "decode")):
            raise InputError(f"file is not valid UTF-8 ({msg})", file=reader.path) from None
        raise InputError(f"invalid JSON ({msg})", file=reader.path) from None
    if isinstance(root, dict) and isinstance(root.get("data"), list):
        yield from enumerate(root["data"])
    else:
        yield 0, root


def _inline_image_info(url: str) -> tuple[int | None, int | None, str | None]:
    """Size and sha256 of a ``data:image/...;base64,`` URL's image (None when unreadable;
    :class:`~memgauge.media.ImageTooLarge` past the pixel bound)."""
    got = inline_image(url)
    if got is None:
        return None, None, None
    data, w, h = got
    return w, h, hashlib.sha256(data).hexdigest()


class LoCoMoBenchmark:
    name = "locomo"
    version = LOADER_VERSION
    options: ClassVar[dict[str, tuple[str, ...]]] = {"asked_after": ASKED_AFTER}  # --bench-option

    def __init__(self, opts: BenchmarkOptions) -> None:
        self.opts = opts
        self.asked_after = _asked_after_option(opts.extra)
        root = Path(opts.data)
        if root.is_dir():
            self.files = sorted((p for p in root.glob("*.json") if p.is_file()), key=_natural_key)
            if not self.files:
                raise InputError("folder holds no *.json conversation files", file=str(root))
        elif root.is_file():
            self.files = [root]
        else:
            raise InputError("data file or folder not found", file=str(root))
        self.keep: set[str] | None = read_id_list(opts.question_ids) if opts.question_ids else None
        self.info = BenchmarkInfo(name=self.name, tier=opts.tier)
        self._shas: dict[str, str] = {}
        self._counts = {"episodes": 0, "questions": 0, "images": 0, "missing_images": 0}
        self._notes: dict[str, Any] = {}
        self.inconsistencies = Inconsistencies(opts.allow_inconsistent)

    # -- streaming --------------------------------------------------------------------------

    def episodes(self) -> Iterator[Episode]:
        counts = {"episodes": 0, "questions": 0, "images": 0, "missing_images": 0}
        self._counts, self._shas = counts, {}
        notes: dict[str, Any] = {"bad_evidence": 0, "repaired_evidence": 0}
        self._notes = notes
        self.inconsistencies = Inconsistencies(self.opts.allow_inconsistent)
        seen_eps: dict[str, str] = {}  # conversation id -> where it was first
        seen_qs: set[str] = set()
        for path in self.files:
            file = str(path)
            reader = HashingReader(file)
            try:
                for index, raw in _iter_conversations(reader):
                    ep, n_images = self._episode(raw, index, path)
                    here = f"{file} #{index}"
                    first = seen_eps.setdefault(ep.episode_id, here)
                    if first != here:
                        raise InputError(f"duplicate conversation id {ep.episode_id!r}: "
                                         f"{first} has it too", file=file, item=f"#{index}",
                                         field="sample_id")
                    seen_qs.update(q.question_id for q in ep.questions)
                    for q in ep.questions:
                        notes["bad_evidence"] += len(q.meta.get("bad_evidence", []))
                        notes["repaired_evidence"] += len(q.meta.get("evidence_repaired", []))
                    if self.keep is not None:
                        kept = [q for q in ep.questions if q.question_id in self.keep]
                        if not kept:
                            continue
                        ep = ep.model_copy(update={"questions": kept})
                    counts["episodes"] += 1
                    counts["questions"] += len(ep.questions)
                    counts["images"] += n_images
                    yield ep
                self._shas[file] = reader.hexdigest()
            finally:
                reader.close()
        if self.keep is not None:
            absent = sorted(self.keep - seen_qs)
            if absent:
                shown = ", ".join(absent[:20]) + (f" … ({len(absent)} in all)"
                                                  if len(absent) > 20 else "")
                raise InputError(f"{len(absent)} question id(s) in the id list are not in the "
                                 f"data: {shown}", file=self.opts.question_ids)

    def _episode(self, raw: Any, index: int, path: Path) -> tuple[Episode, int]:
        """One conversation, checked field after field: each error names its field."""
        err = _ErrorAt(str(path), f"#{index}")
        if type(raw) is not dict:
            raise err(f"expected a conversation object, got {type_name(raw)}")
        episode_id = _episode_id(raw, index, path, err)
        err = _ErrorAt(str(path), episode_id)
        conv = raw.get("conversation", raw)
        cprefix = "conversation." if conv is not raw else ""
        if type(conv) is not dict:
            raise err(f"expected an object, got {type_name(conv)}", "conversation")
        speakers = _speakers(raw, conv, cprefix, err)
        numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION_RE.match(k)))
        dated = sorted(int(m.group(1)) for k in conv if (m := _DATE_RE.match(k)))
        dia_session: dict[str, str] = {}  # turn id -> its session, filled by _session
        sessions: list[Session] = []
        n_images = 0
        for n in numbers:
            session, images = self._session(conv, n, cprefix, speakers, dia_session, err)
            sessions.append(session)
            n_images += images
        questions = self._questions(raw, conv, episode_id, sessions, dia_session, err)
        meta: dict[str, Any] = {"speaker_a": next(iter(speakers)),
                                "speaker_b": list(speakers)[1], "file": path.name}
        orphan_dates = sorted(set(dated) - set(numbers))
        if orphan_dates:  # e.g. 26.json dates sessions 20-35, which it does not have
            meta["dates_without_sessions"] = orphan_dates
        episode = Episode(episode_id=episode_id, sessions=sessions, questions=questions,
                          benchmark=self.info, meta=meta)
        return episode, n_images

    def _session(self, conv: dict[str, Any], n: int, cprefix: str, speakers: dict[str, str],
                 dia_session: dict[str, str], err: _ErrorAt) -> tuple[Session, int]:
        """Session ``n`` and how many images its turns carry."""
        key = sid = f"session_{n}"
        turns_raw = conv[key]
        if type(turns_raw) is not list:
            raise err(f"expected a list of turns, got {type_name(turns_raw)}", cprefix + key)
        date = conv.get(f"session_{n}_date_time")
        if date is not None and type(date) is not str:
            raise err(f"expected str, got {type_name(date)}", f"{cprefix}{key}_date_time")
        turns = [self._turn(t, f"{cprefix}{key}[{j}]", speakers, dia_session, sid, err)
                 for j, t in enumerate(turns_raw)]
        session = build_session({"session_id": sid, "date": date, "turns": turns, "meta": {}})
        return session, sum(len(t.images) for t in turns)

    def _turn(self, t: Any, field: str, speakers: dict[str, str], dia_session: dict[str, str],
              sid: str, err: _ErrorAt) -> Turn:
        if type(t) is not dict:
            raise err(f"expected a turn object, got {type_name(t)}", field)
        speaker = t.get("speaker")
        role = speakers.get(speaker) if type(speaker) is str else None
        if role is None:
            raise err("missing required field" if speaker is None else
                      f"speaker {speaker!r} is neither speaker_a nor speaker_b",
                      field + ".speaker")
        dia_id = t.get("dia_id")
        if type(dia_id) is not str or not dia_id:
            raise err("missing required field" if dia_id is None else
                      f"expected a non-empty str, got {type_name(dia_id)}", field + ".dia_id")
        if dia_id in dia_session:
            raise err(f"duplicate dia_id {dia_id!r}", field + ".dia_id")
        dia_session[dia_id] = sid
        text = t.get("text", "")
        if type(text) is not str:
            raise err(f"expected str, got {type_name(text)}", field + ".text")
        images: list[ImageRef] = []
        if t.get("img_url") or t.get("blip_caption"):
            images.append(self._image(t, dia_id, field, err))
        extra = {k: v for k, v in t.items() if k not in _TURN_KEYS}
        return build_turn({"turn_id": dia_id, "role": role, "text": text, "images": images,
                           "speaker": speaker, "meta": extra})

    def _questions(self, raw: dict[str, Any], conv: dict[str, Any], episode_id: str,
                   sessions: list[Session], dia_session: dict[str, str],
                   err: _ErrorAt) -> list[Question]:
        qa = raw.get("qa", conv.get("qa"))
        if type(qa) is not list:
            raise err("missing required field" if qa is None else
                      f"expected list, got {type_name(qa)}", "qa")
        questions = [self._question(q, k, episode_id, dia_session, err)
                     for k, q in enumerate(qa)]
        for q in questions:  # the dia_id evidence says whether a shared photo is involved
            q.labels = inferred_labels(q, sessions)
        if self.asked_after == "evidence":
            self._ask_after_evidence(questions, sessions, err.file)
        return questions

    def _ask_after_evidence(self, questions: list[Question], sessions: list[Session],
                            file: str) -> None:
        """asked_after=evidence: each question right after its latest evidence's session; a
        pointer that names no turn is reported (where the question is asked then)."""
        order = {s.session_id: i for i, s in enumerate(sessions)}
        for k, q in enumerate(questions):
            q.asked_after = _after_latest_evidence(q, order)
            for token in pointers_that_move(q, order):
                shown = "at the end" if q.asked_after is None else \
                    f"after {sessions[q.asked_after].session_id}"
                self.inconsistencies.report(
                    f"evidence pointer {token!r} names no turn of this conversation, so "
                    "when to ask the question (asked_after=evidence) is unknown; without "
                    f"it, it would be asked {shown}", file=file, item=q.question_id,
                    field=f"qa[{k}].evidence")

    @staticmethod
    def _image(t: dict[str, Any], dia_id: str, field: str, err: _ErrorAt) -> ImageRef:
        urls = t.get("img_url")
        if isinstance(urls, str):
            urls = [urls]
        if urls is not None and (type(urls) is not list
                                 or not all(isinstance(u, str) for u in urls)):
            raise err(f"expected a list of URLs, got {type_name(urls)}", field + ".img_url")
        url = urls[0] if urls else None
        caption = t.get("blip_caption")
        if caption is not None and type(caption) is not str:
            raise err(f"expected str, got {type_name(caption)}", field + ".blip_caption")
        meta: dict[str, Any] = {}
        if t.get("query") is not None:
            meta["query"] = t["query"]
        if urls and len(urls) > 1:
            meta["more_urls"] = urls[1:]
        if "re-download" in t:
            meta["re-download"] = t["re-download"]
        width = height = sha = None
        if url is None:
            meta["caption_only"] = True  # the release dropped the URL; only the caption is left
            source = f"{dia_id}:blip_caption"
        elif url.startswith("data:"):
            # Two turns (42.json D5:6, 44.json D19:28) inline the photo as a data: URL.
            source = f"{dia_id}:img_url[0] (inline {url[5:url.find(';')]}, {len(url)} chars)"
            meta["inline"] = True
            try:
                width, height, sha = _inline_image_info(url)
            except ImageTooLarge as exc:
                raise err(str(exc), field + ".img_url[0]") from None
        elif url.startswith(("http://", "https://")):
            source = url
        else:
            # A model is sent an image's URL as it stands (never fetched here): a file:
            # URL or a path would hand it this machine's files (issue 25, section 2).
            shown = url if len(url) <= 80 else url[:80] + "…"
            raise err(f"expected an http(s) or data: URL, got {shown!r}",
                      field + ".img_url[0]")
        return build_image({"source": source, "path": None, "url": url, "sha256": sha,
                            "width": width, "height": height,
                            "captions": {"generic": caption} if caption else {},
                            "missing": False, "meta": meta})

    @staticmethod
    def _question(q: Any, k: int, episode_id: str, dia_session: dict[str, str],
                  err: _ErrorAt) -> Question:
        qid = f"{episode_id}:q{k}"
        field = f"qa[{k}]"
        if type(q) is not dict:
            raise err(f"expected a question object, got {type_name(q)}", field, qid)
        text = q.get("question")
        if type(text) is not str:
            raise err("missing required field" if text is None else
                      f"expected str, got {type_name(text)}", field + ".question", qid)
        category = q.get("category")
        if type(category) is not int or category not in CATEGORIES:
            raise err("missing required field" if category is None else
                      f"expected a category 1-5, got {category!r}", field + ".category", qid)
        meta: dict[str, Any] = {"category": category}
        answer, answer_type = _answer(q, category, field, qid, err, meta)
        evidence = _evidence(q, field, qid, dia_session, err, meta)
        return Question(question_id=qid, text=text, answer=answer, answer_type=answer_type,
                        ability=CATEGORIES[category], subtype=f"category_{category}",
                        evidence=evidence, meta=meta)

    # -- manifest ---------------------------------------------------------------------------

    def public_image_urls(self) -> int:
        """How many shared photos the data knows only by a public web address: in image mode
        each is sent to the endpoint as its URL, for the endpoint to fetch (a fresh pass)."""
        fresh = LoCoMoBenchmark(self.opts)
        return sum(1 for ep in fresh.episodes() for s in ep.sessions for t in s.turns
                   for image in t.images
                   if image.path is None and (image.url or "").startswith(("http://",
                                                                           "https://")))

    def manifest(self) -> dict[str, Any]:
        inputs = {str(p): self._shas.get(str(p)) or file_sha256(p) for p in self.files}
        if self.opts.question_ids:
            inputs[str(self.opts.question_ids)] = file_sha256(self.opts.question_ids)
        out: dict[str, Any] = {
            "name": self.name,
            "version": self.version,
            "tier": self.opts.tier,
            "inputs": inputs,
            "counts": dict(self._counts),
            "evidence_problems": dict(self._notes),
            "asked_after": self.asked_after,
            **self.inconsistencies.manifest(),
        }
        if self.keep is not None:
            out["subset"] = {"file": str(self.opts.question_ids), "ids": len(self.keep)}
        if self.opts.allow_missing_images:
            out["missing_images"] = []
        return out


@benchmark("locomo")
def locomo(opts: BenchmarkOptions) -> LoCoMoBenchmark:
    """LoCoMo: a conversation file, a folder of them, or the combined ``locomo10.json``."""
    return LoCoMoBenchmark(opts)


class _ErrorAt:
    """Makes the :class:`InputError` of a field of one conversation (``item``: where)."""

    def __init__(self, file: str, where: str) -> None:
        self.file, self.where = file, where

    def __call__(self, message: str, field: str | None = None,
                 item: str | None = None) -> InputError:
        return InputError(message, file=self.file, item=item or self.where, field=field)


def _episode_id(raw: dict[str, Any], index: int, path: Path, err: _ErrorAt) -> str:
    """``sample_id``; without one, the file's name (and the index after the first)."""
    sample_id = raw.get("sample_id")
    if sample_id is not None and type(sample_id) not in (str, int):
        raise err(f"expected str, got {type_name(sample_id)}", "sample_id")
    if sample_id is not None:
        return str(sample_id)
    return path.stem if index == 0 else f"{path.stem}-{index}"


def _speakers(raw: dict[str, Any], conv: dict[str, Any], cprefix: str,
              err: _ErrorAt) -> dict[str, str]:
    """Each speaker's name -> role: speaker_a is the user, speaker_b the assistant."""
    speakers = {}
    for key, role in (("speaker_a", "user"), ("speaker_b", "assistant")):
        name = conv.get(key, raw.get(key))
        if type(name) is not str:
            raise err("missing required field" if name is None else
                      f"expected str, got {type_name(name)}", cprefix + key)
        speakers[name] = role
    if len(speakers) != 2:
        raise err("speaker_a and speaker_b have the same name", cprefix + "speaker_b")
    return speakers


def _as_str(q: dict[str, Any], key: str, field: str, qid: str, err: _ErrorAt) -> str | None:
    """A question's text field; a number is taken as its text (``2022``, not ``2022.0``)."""
    v = q.get(key)
    if v is None:
        return None
    if type(v) is str:
        return v
    if type(v) in (int, float):
        return str(int(v)) if type(v) is float and v.is_integer() else str(v)
    raise err(f"expected str, got {type_name(v)}", f"{field}.{key}", qid)


def _answer(q: dict[str, Any], category: int, field: str, qid: str, err: _ErrorAt,
            meta: dict[str, Any]) -> tuple[str, AnswerType]:
    """The gold answer: category 5 (adversarial) is to be refused, its answers kept in
    ``meta``; any other category needs ``answer``."""
    if category != 5:
        answer = _as_str(q, "answer", field, qid, err)
        if answer is None:
            raise err("missing required field", field + ".answer", qid)
        return answer, AnswerType.FREE_TEXT
    adversarial = _as_str(q, "adversarial_answer", field, qid, err)
    if adversarial is not None:
        meta["adversarial_answer"] = adversarial
    original = _as_str(q, "answer", field, qid, err)
    if original is not None:  # two items in 26.json carry one; recorded, not used
        meta["original_answer"] = original
    return ADVERSARIAL_GOLD, AnswerType.REFUSAL


def _evidence(q: dict[str, Any], field: str, qid: str, dia_session: dict[str, str],
              err: _ErrorAt, meta: dict[str, Any]) -> list[EvidenceRef]:
    """The evidence turns, read from loose ``D1:3``-style pointers: those naming no turn go
    to ``meta["bad_evidence"]``, entries read as other pointers to ``evidence_repaired``."""
    raw_ev = q.get("evidence")
    if raw_ev is None:
        raw_ev = []
    if type(raw_ev) is not list:
        raise err(f"expected list, got {type_name(raw_ev)}", field + ".evidence", qid)
    evidence: list[EvidenceRef] = []
    bad: list[Any] = []
    repaired: list[dict[str, Any]] = []
    seen: set[str] = set()
    for entry in raw_ev:
        if type(entry) is not str:
            bad.append(entry)
            continue
        got = []
        for token in _SPLIT_RE.split(entry.strip()):
            m = _DIA_RE.match(token)
            dia = f"D{int(m.group(1))}:{int(m.group(2))}" if m else None
            if dia is None or dia not in dia_session:
                bad.append(token)
                continue
            got.append(dia)
            if dia not in seen:
                seen.add(dia)
                evidence.append(EvidenceRef(session_id=dia_session[dia], turn_id=dia))
        if got and got != [entry]:
            repaired.append({"raw": entry, "as": got})
    if bad:
        meta["bad_evidence"] = bad
    if repaired:
        meta["evidence_repaired"] = repaired
    return evidence
