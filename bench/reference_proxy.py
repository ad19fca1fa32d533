#!/usr/bin/env python3
"""A stand-in for the MemLens reference harness's request path, to time the reference on THIS
machine next to ``memgauge run``.

This is a re-implementation written from the documented behaviour of ``eval_api.py`` +
``data.load_data`` of xrenaf/MEMLENS (``../shared/research/memlens-repo.md`` sections 1.4,
2.2, 2.5, 3.2-3.4 and ``../shared/research/perf-anchors.md`` section 3a), not copied code. It
is used only to measure the reference's speed: the recorded anchor (6.12 items/s) came from a
different machine, so a fair comparison needs the reference's cost measured here, at the same
moment. Path taken: the Kimi/chat-completions wrapper (model name ``kimi-stub``) with
``--use_image_urls False``, i.e. every local image is decoded and re-encoded as PNG base64 per
request, as in the anchor runs.

    # one run (what is timed from outside)
    .venv/bin/python bench/reference_proxy.py run --data D.json --image-dir IMG \\
        --base-url http://127.0.0.1:PORT/v1 --batch-size 4 --out pred.json [--limit 20]
    # measured runs against a fresh stub each, result JSON + Markdown under bench/out/
    .venv/bin/python bench/reference_proxy.py measure --batch-size 4,32 --repeats 1
    # single-thread CPU of prepare_inputs (documented: 222 ms/item on the anchor machine)
    .venv/bin/python bench/reference_proxy.py prepare --data D.json --image-dir IMG --n 5
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import re
import string
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from PIL import Image

# memlens-repo.md 2.2 (rules 1, 6, 7): the prompt texts.
SYSTEM_TEMPLATE = ("Provide answers based on the given conversation history. If the question "
                   "cannot be answered based on the given conversation, respond with "
                   "\"Insufficient information\".")
QUESTION_TEMPLATE = "{instruction}\nQuestion Date: {question_date}\nQuestion: {question}\n"
INSTRUCTION = "Directly output the answer with no extra output."
IMAGE_TOKEN = "<image>"
CONTENT_FILTER_OUTPUT = "[CONTENT_FILTER_REJECTED]"


# --------------------------------------------------------------------------------------------
# Loading and prompt assembly (data.load_data): everything is built up front for all items.

def resolve_image_path(entry: Any, image_dir: str) -> str | None:
    """memlens-repo.md 1.4 with prefer_url=False: first non-empty path field, tried as given
    and then under image_dir; None (image silently dropped) when nothing exists."""
    if isinstance(entry, dict):
        value = next((entry[k] for k in ("file", "path", "file_path", "img_file")
                      if entry.get(k)), None)
    else:
        value = entry
    if isinstance(value, list):
        value = value[0] if value else None
    if not value:
        return None
    if value.startswith(("http://", "https://")):
        return value
    for cand in (value, os.path.join(image_dir, value)):
        if os.path.exists(cand):
            return os.path.abspath(cand)
    return None


def _text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def _image(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def _sessions(item: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(date, turns) per session; a session is a bare turn list or {"date", "session"}."""
    dates = item.get("haystack_dates") or []
    out = []
    for i, sess in enumerate(item.get("haystack_sessions") or []):
        if isinstance(sess, dict):
            out.append((sess.get("date") or "unknown", sess.get("session") or []))
        else:
            out.append((dates[i] if i < len(dates) and dates[i] else "unknown", sess))
    return out


def _turn_blocks(content: str, images: list[str]) -> list[dict[str, Any]]:
    """memlens-repo.md 2.2 rule 4: interleave images at <image> placeholders (surplus images
    after the text, surplus placeholders dropped); no placeholder: images before the text."""
    if not images:
        text = content.replace(IMAGE_TOKEN, "").strip()
        return [_text(text)] if text else []
    if IMAGE_TOKEN not in content:
        text = content.strip()
        return [_image(p) for p in images] + ([_text(text)] if text else [])
    blocks: list[dict[str, Any]] = []
    pending = list(images)
    for j, seg in enumerate(content.split(IMAGE_TOKEN)):
        if j > 0 and pending:
            blocks.append(_image(pending.pop(0)))
        if seg.strip():
            blocks.append(_text(seg.strip()))
    return blocks + [_image(p) for p in pending]


def build_messages(item: dict[str, Any], image_dir: str) -> tuple[list[dict], list[str]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": [_text(SYSTEM_TEMPLATE)]}]
    all_images: list[str] = []
    for i, (date, turns) in enumerate(_sessions(item), start=1):
        header = f"=== Session {i} (Date: {date}) ==="
        for k, turn in enumerate(turns):
            images = [p for p in (resolve_image_path(e, image_dir)
                                  for e in turn.get("images") or []) if p]
            blocks = _turn_blocks(turn.get("content") or "", images)
            if k == 0:  # rule 3: the session header goes on the session's first turn
                if blocks and blocks[0]["type"] == "text":
                    blocks[0] = _text(header + "\n" + blocks[0]["text"])
                else:
                    blocks.insert(0, _text(header))
            if not blocks:
                continue
            all_images += images
            role = "assistant" if turn.get("role") == "assistant" else "user"
            messages.append({"role": role, "content": blocks})
    question = QUESTION_TEMPLATE.format(instruction=INSTRUCTION,
                                        question_date=item.get("question_date") or "unknown",
                                        question=item.get("question", ""))
    messages.append({"role": "user", "content": [_text(question)]})
    return messages, all_images


def build_context(item: dict[str, Any], image_dir: str) -> tuple[str, list[str]]:
    """The legacy flat string (memlens-repo.md 2.1). Unused by the API path, but the
    reference computes it for every item, so it costs time and memory here too."""
    lines, image_list = [], []
    for i, (date, turns) in enumerate(_sessions(item), start=1):
        lines.append(f"\n=== Session {i} (Date: {date}) ===\n")
        for turn in turns:
            images = [p for p in (resolve_image_path(e, image_dir)
                                  for e in turn.get("images") or []) if p]
            content = turn.get("content") or ""
            if images and IMAGE_TOKEN not in content:
                content = " ".join([IMAGE_TOKEN] * len(images) + [content])
            image_list += images
            speaker = "[User]" if turn.get("role") == "user" else "[Assistant]"
            lines.append(f"{speaker}: {content}")
    return "\n".join(lines), image_list


def load_data(path: str, image_dir: str, limit: int | None = None) -> list[dict[str, Any]]:
    with open(path) as f:
        raw = json.load(f)  # the whole file at once, as the reference does
    items = raw.get("data", raw) if isinstance(raw, dict) else raw
    if limit is not None:  # --max_test_samples slices after the full parse
        items = items[:limit]
    out = []
    for it in items:
        messages, message_images = build_messages(it, image_dir)
        context, image_list = build_context(it, image_dir)
        out.append({"context": context, "messages": messages, "question": it.get("question"),
                    "question_date": it.get("question_date") or "unknown",
                    "image_list": image_list, "message_image_list": message_images,
                    "answer": it.get("answer"), "question_id": it.get("question_id"),
                    "question_type": it.get("question_type"),
                    "question_subtype": it.get("question_subtype")})
    return out


# --------------------------------------------------------------------------------------------
# Per-item request path (Kimi wrapper): prepare_inputs + generate, run in worker threads.

def image_to_data_url(path: str, max_size: int) -> str:
    """perf-anchors.md 'Why the model name is kimi-stub': open, RGB, LANCZOS-resize if a side
    is over max_size, re-encode as PNG, base64 -- ~80 % of the reference's CPU."""
    with Image.open(path) as im:
        img = im.convert("RGB")
    w, h = img.size
    if max(w, h) > max_size:
        scale = max_size / max(w, h)
        img = img.resize((max(1, int(w * scale)), max(1, int(h * scale))), Image.LANCZOS)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def prepare_inputs(item: dict[str, Any], max_size: int) -> list[dict[str, Any]]:
    out = []
    for msg in item["messages"]:
        blocks = [_image(image_to_data_url(b["image_url"]["url"], max_size))
                  if b["type"] == "image_url" else b for b in msg["content"]]
        out.append({"role": msg["role"], "content": blocks})
    return out


def call_api(fn: Any, attempts: int = 5, pause_s: float = 10.0) -> Any:
    """model_utils.call_api: up to 5 attempts, 10 s apart (on top of the SDK's own retries);
    a content-filter error is not retried. None when every attempt failed."""
    for n in range(attempts):
        try:
            return fn()
        except Exception as e:  # the reference catches everything here
            if "content_filter" in str(e):
                raise
            print(f"API error (attempt {n + 1}/{attempts}): {e}", file=sys.stderr)
            if n + 1 < attempts:
                time.sleep(pause_s)
    return None


def generate(client: Any, model: str, messages: list[dict], max_tokens: int) -> dict | None:
    def once() -> Any:
        return client.chat.completions.create(model=model, messages=messages, temperature=0,
                                              top_p=0.95, max_tokens=max_tokens)
    try:
        resp = call_api(once)
    except Exception:  # noqa: BLE001 - content filter, as the Kimi wrapper maps it
        return {"output": CONTENT_FILTER_OUTPUT, "input_len": 0, "output_len": 0}
    if resp is None:
        return None
    usage = resp.usage
    return {"output": resp.choices[0].message.content or "",
            "input_len": usage.prompt_tokens if usage else 0,
            "output_len": usage.completion_tokens if usage else 0}


# --------------------------------------------------------------------------------------------
# Post-processing and the inline metrics (memlens-repo.md 3.3, 4.4)

def parse_model_output(raw: str) -> str:
    text = re.sub(r"<think>.*?</think>", "", raw, flags=re.DOTALL)
    return re.sub(r"<\|[^|>]*\|>", "", text).strip()


# A "." or "/" between two digits matches group 1 and is kept (460.00, 2024/01/15).
_PUNCT_RE = re.compile(r"((?<=\d)[./](?=\d))|[" + re.escape(string.punctuation) + "]")


def normalize_answer(s: str) -> str:
    """memlens-repo.md 4.4: lowercase, punctuation to spaces, drop an/the and "a" before a
    word (so choice label "a" survives), collapse whitespace."""
    s = _PUNCT_RE.sub(lambda m: m.group(1) or " ", s.lower())
    s = re.sub(r"\b(an|the)\b", " ", s)
    s = re.sub(r"\ba\s+(?=[a-z])", " ", s)
    return " ".join(s.split())


def sub_em(pred: str, gold: str) -> int:
    return int(bool(pred) and bool(gold) and gold in pred)


def f1(pred: str, gold: str) -> float:
    p, g = pred.split(), gold.split()
    common = sum((Counter(p) & Counter(g)).values())
    if not common:
        return 0.0
    prec, rec = common / len(p), common / len(g)
    return 2 * prec * rec / (prec + rec)


def make_record(item: dict[str, Any], gen: dict[str, Any]) -> dict[str, Any]:
    prediction = parse_model_output(gen["output"])
    parsed, gold = normalize_answer(prediction), normalize_answer(str(item["answer"] or ""))
    return {"question_id": item["question_id"], "question": item["question"],
            "question_type": item["question_type"],
            "question_subtype": item["question_subtype"], "reference_answer": item["answer"],
            "raw_prediction": gen["output"], "prediction": prediction, "parsed_output": parsed,
            "input_len": gen["input_len"], "output_len": gen["output_len"],
            "sub_em": sub_em(parsed, gold), "f1": f1(parsed, gold)}


# --------------------------------------------------------------------------------------------
# The eval_api.py main loop

def run(a: argparse.Namespace) -> int:
    from openai import OpenAI

    t0 = time.perf_counter()
    items = load_data(a.data, a.image_dir, a.limit)
    client = OpenAI(base_url=a.base_url, api_key="x", max_retries=2)  # shared by the threads
    cache = a.out + ".cache"
    if os.path.exists(cache):  # like --overwrite (the anchor runs used it)
        os.remove(cache)

    def process(idx: int) -> tuple[int, dict | None]:
        item = items[idx]
        try:
            gen = generate(client, a.model, prepare_inputs(item, a.max_image_size),
                           a.max_tokens)
        except Exception as e:  # noqa: BLE001 - logged and skipped, as in the reference
            print(f"item {idx} failed: {e}", file=sys.stderr)
            return idx, None
        return idx, (make_record(item, gen) if gen is not None else None)

    results: dict[int, dict] = {}
    t_loop = time.perf_counter()
    with open(cache, "a") as cf, ThreadPoolExecutor(max_workers=a.batch_size) as ex:
        for fut in as_completed([ex.submit(process, i) for i in range(len(items))]):
            idx, rec = fut.result()
            if rec is not None:  # failed items are neither cached nor output
                results[idx] = rec
                cf.write(json.dumps({"_idx": idx, **rec}) + "\n")
                cf.flush()
    loop_s = time.perf_counter() - t_loop
    data = [results[i] for i in sorted(results)]
    n = len(data)
    averaged = {k: (sum(r[k] for r in data) / n if n else 0.0)
                for k in ("sub_em", "f1", "input_len", "output_len")}
    throughput = {"items": n, "loop_s": round(loop_s, 3),
                  "items_per_s": round(n / loop_s, 3) if loop_s else 0.0}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"args": {k: v for k, v in vars(a).items() if k != "func"}, "data": data,
                   "metrics": {"overall": {"sub_em": averaged["sub_em"], "f1": averaged["f1"],
                                           "count": n}},
                   "averaged_metrics": averaged, "throughput": throughput}, f, indent=2)
    print(f"Completed {n}/{len(items)}; throughput {throughput['items_per_s']} items/s "
          f"(pool only); total {time.perf_counter() - t0:.2f} s", file=sys.stderr)
    return 0


def prepare_probe(a: argparse.Namespace) -> int:
    """Single-thread cost of prepare_inputs per item (perf-anchors.md CPU breakdown)."""
    items = load_data(a.data, a.image_dir, a.n)
    c0, w0 = time.process_time(), time.perf_counter()
    prepared = [prepare_inputs(it, a.max_image_size) for it in items]
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    body_bytes = sum(len(json.dumps(m)) for m in prepared)  # not timed: size only
    n = len(items)
    print(json.dumps({"items": n, "images": sum(len(it["message_image_list"]) for it in items),
                      "prepare_cpu_ms_per_item": round(1000 * cpu / n, 1),
                      "prepare_wall_ms_per_item": round(1000 * wall / n, 1),
                      "messages_json_mb_per_item": round(body_bytes / n / 1e6, 3)}))
    return 0


# --------------------------------------------------------------------------------------------
# Measuring mode (for the other benches)

def proxy_cmd(wl: Any, base_url: str, out: Path, batch_size: int,
              limit: int | None = None) -> list[str]:
    import _common as C

    cmd = [C.PY, str(Path(__file__).resolve()), "run", "--data", str(wl.data),
           "--image-dir", str(wl.image_dir), "--base-url", base_url,
           "--batch-size", str(batch_size), "--out", str(out)]
    return cmd + (["--limit", str(limit)] if limit is not None else [])


def measure_proxy(wl: Any, work: Path, latency_ms: float, batch_size: int,
                  wait_quiet: float = 0.0, *, limit: int | None = None,
                  tag: str | None = None) -> dict[str, Any]:
    """One measured proxy run against a fresh stub; a result row like anchor_workload.py's.
    items/s = items in the output JSON / wall of the whole process (as the anchor defines)."""
    import _common as C

    tag = tag or f"reference_proxy_bs{batch_size}"
    out = C.fresh_dir(work / "runs" / tag) / "predictions.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    with C.stub(work, latency_ms, tag) as s:
        cmd = proxy_cmd(wl, s.base_url, out, batch_size, limit)
        busy_before = C.wait_quiet(wait_quiet) if wait_quiet > 0 else None
        m = C.measure(cmd)
    st = s.final or {}
    n = len(json.loads(out.read_text())["data"]) if out.is_file() else 0
    reqs = st.get("requests") or 0
    row = {
        "batch_size": batch_size, "items": n, "rc": m.rc,
        "wall_s": round(m.wall_s, 2),
        "items_per_s": round(n / m.wall_s, 2) if m.wall_s else None,
        "offered_items_per_s": batch_size / (latency_ms / 1000.0) if latency_ms else None,
        **C.run_columns(m, st, n),
        "stub_mb_per_request": round(st.get("mb_in", 0) / reqs, 3) if reqs else None,
        "busy_before_pct": busy_before,
        "command": C.shell_quote(cmd),
    }
    if m.rc != 0:
        row["stderr_tail"] = m.stderr_tail
        print(f"reference proxy failed (rc {m.rc}):\n{m.stderr_tail}", file=sys.stderr)
    return row


def measure_main(a: argparse.Namespace) -> int:
    import _common as C
    from anchor_workload import REFERENCE  # the recorded anchor-machine figures

    C.require_tools()
    work = a.work.resolve()
    wl = C.workload_small(work)
    rows = []
    for bs in [int(x) for x in a.batch_size.split(",") if x.strip()]:
        for rep in range(a.repeats):
            row = measure_proxy(wl, work, a.latency_ms, bs, a.wait_quiet, limit=a.limit,
                                tag=f"{a.name}_bs{bs}_r{rep}")
            rec = REFERENCE.get(bs) or {}
            row["run"] = rep + 1
            row["recorded_items_per_s"] = rec.get("items_per_s_wall")
            row["vs_recorded"] = (round(row["items_per_s"] / rec["items_per_s_wall"], 2)
                                  if rec and row["items_per_s"] else None)
            rows.append(row)
    result = {"bench": "reference_proxy", "machine": C.machine(),
              "workload": {"data": C.rel(wl.data), "limit": a.limit, **wl.info},
              "latency_ms": a.latency_ms, "recorded_reference": REFERENCE, "runs": rows,
              "command_line": C.shell_quote([sys.executable, *sys.argv])}
    path = C.write_result(work, a.name, result)
    cols = [("batch_size", "bs"), ("run", "run"), ("items", "items"), ("wall_s", "wall s"),
            ("items_per_s", "items/s (wall)"), ("recorded_items_per_s", "recorded items/s"),
            ("vs_recorded", "× recorded"), ("max_rss_mb", "peak RSS MB"),
            ("harness_cpu_ms_per_item", "CPU ms/item"), ("cpu_pct", "CPU %"),
            ("stub_requests", "stub req."), ("stub_max_inflight", "max in-flight"),
            ("stub_inline_images", "inline images"), ("stub_mb_per_request", "MB/request"),
            ("stub_cpu_s", "stub CPU s"), ("host_steal_pct", "steal %"),
            ("other_load_pct", "other load %")]
    items = f"first {a.limit}" if a.limit else "200"
    title = (f"### {a.name}: reference proxy on this machine ({items} items x 8 images, "
             f"stub {a.latency_ms:g} ms)")
    note = ("Reference request path re-implemented from the documented behaviour "
            "(bench/reference_proxy.py); 'recorded' is the anchor machine's eval_api.py "
            "figure (perf-anchors.md 3a). Documented per request: 8 inline images, 4.62 MB.")
    lines = [title, "", C.md_table(rows, cols), "", note]
    print(C.write_markdown(work, a.name, lines, path))
    return 0


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _common / anchor_workload
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the proxy once (eval_api.py's request path)")
    r.add_argument("--data", required=True)
    r.add_argument("--image-dir", required=True)
    r.add_argument("--base-url", required=True)
    r.add_argument("--batch-size", type=int, default=4)
    r.add_argument("--out", required=True)
    r.add_argument("--limit", type=int, default=None)
    r.add_argument("--model", default="kimi-stub")
    r.add_argument("--max-tokens", type=int, default=512)
    r.add_argument("--max-image-size", type=int, default=800)
    r.set_defaults(func=run)
    pr = sub.add_parser("prepare", help="time prepare_inputs single-threaded")
    pr.add_argument("--data", required=True)
    pr.add_argument("--image-dir", required=True)
    pr.add_argument("--n", type=int, default=5)
    pr.add_argument("--max-image-size", type=int, default=800)
    pr.set_defaults(func=prepare_probe)
    ms = sub.add_parser("measure", help="measured runs against a fresh stub (result JSON + MD)")
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["measure"]:  # _common takes ~0.1 s to import: keep it off the timed run
        import _common as C

        C.add_common_args(ms, "reference_proxy")
        ms.add_argument("--batch-size", default="4,32", help="comma list")
        ms.add_argument("--limit", type=int, default=None, help="first N items only")
    ms.set_defaults(func=measure_main)
    a = p.parse_args(argv)
    return a.func(a)


if __name__ == "__main__":
    sys.exit(main())
