"""Running evaluations: plan, execute, persist, resume, merge."""

from ..runfolder import load_manifest, read_records
from ._execute import (
    RunConfig,
    Runner,
    RunResult,
    RunStopped,
    in_shard,
    make_record,
    parse_shard,
    run,
)
from ._merge import merge_runs

__all__ = ["RunConfig", "RunResult", "RunStopped", "Runner", "in_shard", "load_manifest",
           "make_record",
           "merge_runs", "parse_shard", "read_records", "run"]
