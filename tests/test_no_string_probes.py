"""No capability of our own types is found by a string probe (issue 26 §1, design 0045).

``getattr(obj, "name", default)`` and ``hasattr(obj, "name")`` hide what code relies on
from a type checker and from a plugin author: a capability is declared instead (a Protocol
attribute, a runtime-checkable capability Protocol, a dataclass field with a default, a
typed registry record). The probes left test objects whose type truly varies: the
platform, the standard library's and third-party packages' objects. Each is listed below
with why; a new probe fails this test until it is declared instead, or listed with a
reason. An entry whose probe is gone fails too, so the list stays true.
"""

from __future__ import annotations

import ast
from pathlib import Path

import memgauge

SRC = Path(memgauge.__file__).parent

# "path under src/memgauge: attribute" -> why a probe is right there.
ALLOWED = {
    # The platform and the standard library (feature tests).
    "cache.py: register_at_fork": "os.register_at_fork: POSIX only (no fork on Windows)",
    "io.py: register_at_fork": "os.register_at_fork: POSIX only (no fork on Windows)",
    "io.py: MADV_DONTNEED": "mmap.MADV_DONTNEED: Linux and some BSDs only",
    "io.py: madvise": "mmap.mmap.madvise: Python 3.8+ on platforms with madvise(2)",
    "runfolder.py: EDQUOT": "errno.EDQUOT: not defined on every platform",
    "runfolder.py: pread": "os.pread: POSIX only",
    "runner/_workers.py: fork": "os.fork: POSIX only (the workers need fork)",
    "models/_llama_server.py: getloadavg": "os.getloadavg: POSIX only",
    "models/_llama_server.py: reason": "urllib's URLError has .reason, the other OSErrors "
                                       "caught with it do not",
    "models/_llama_server.py: conn": "a threading.local's slot: unset in a thread until its "
                                     "first request",
    "benchmarks/locomo.py: peek": "a file object's peek: buffered readers have it, others not",
    "prompt.py: __post_init__": "dataclass introspection: whether the class defines one",
    # Third-party objects whose shape varies by version or kind.
    "validation/_gates.py: bitwise_count": "numpy.bitwise_count: numpy >= 2 only",
    "systems/langmem_system.py: message": "a LangChain generation: only chat generations "
                                          "carry a message",
    "systems/langmem_system.py: tool_calls": "a LangChain message: only AI messages carry "
                                             "tool calls",
    "systems/langmem_system.py: usage_metadata": "a LangChain message: only AI messages "
                                                 "carry usage",
    "systems/langmem_system.py: model_dump": "a LangMem memory's content: a pydantic model "
                                             "or the dict it came as",
    "systems/langmem_system.py: __repr_name__": "a LangMem content: pydantic models have it, "
                                                "dicts do not",
    "systems/langmem_system.py: json_doc_id": "LangMem's RemoveDoc content names the "
                                              "memory it removes; other contents do not",
    "games/envs/crafter_env.py: health": "a crafter object: creatures have health, "
                                         "materials and plants not all",
}


def string_probes(source: str) -> list[tuple[int, str]]:
    """(line, attribute) of every ``getattr``/``hasattr`` call naming the attribute by a
    string literal in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)):
            found.append((node.lineno, node.args[1].value))
    return found


def _probes_in_src() -> dict[str, list[str]]:
    """"path: attribute" -> the "path:line" of each probe of it under src/memgauge."""
    out: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for line, attribute in string_probes(path.read_text(encoding="utf-8")):
            out.setdefault(f"{rel}: {attribute}", []).append(f"{rel}:{line}")
    return out


def test_the_scan_finds_each_kind_of_probe() -> None:
    source = ('a = getattr(x, "one", None)\nb = hasattr(x, "two")\n'
              'c = getattr(getattr(x, "three", None), "four", 0)\n'
              'd = getattr(x, name)\ne = x.five\n')
    assert sorted(string_probes(source)) == [(1, "one"), (2, "two"), (3, "four"),
                                             (3, "three")]


def test_no_string_probe_outside_the_allow_list() -> None:
    found = _probes_in_src()
    new = {key: where for key, where in found.items() if key not in ALLOWED}
    assert not new, ("string capability probes: declare the capability (design 0045), or "
                     f"list a feature test in ALLOWED with why: {new}")


def test_every_allowed_probe_is_still_there() -> None:
    gone = sorted(set(ALLOWED) - set(_probes_in_src()))
    assert not gone, f"delete these ALLOWED entries, their probes are gone: {gone}"


def test_every_allowed_probe_says_why() -> None:
    assert all(len(reason.split()) >= 3 for reason in ALLOWED.values())
