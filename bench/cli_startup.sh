#!/bin/sh
# The CLI's start-up: modules each command imports, and CPU/wall time per command, for two
# source trees (e.g. `git archive <commit> src | tar -x -C <before-dir>`).
#
#   sh bench/cli_startup.sh BEFORE_SRC AFTER_SRC
#
# Times with /usr/bin/time over RUNS runs each (default 7); quote medians. Design 0046.
set -eu
before=$1; after=$2; runs=${RUNS:-7}
log=$(mktemp); trap 'rm -f "$log"' EXIT
count() {  # modules imported: all, and memgauge's own (python -X importtime)
    src=$1; shift
    PYTHONPATH=$src python3 -X importtime -m memgauge "$@" 2>&1 >/dev/null |
        awk -F'|' '/^import time:/ && NR>1 {n++; if ($3 ~ /memgauge/) m++} END {print n" modules, "m" memgauge"}'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timed() {  # median CPU (user+sys) and wall seconds
    src=$1; shift
    i=0; : > "$log"
    while [ $i -lt "$runs" ]; do
        PYTHONPATH=$src /usr/bin/time -f "%U %S %e" -a -o "$log" \
            python3 -m memgauge "$@" >/dev/null 2>&1 || true
        i=$((i + 1))
    done
    cpu=$(awk '{print $1 + $2}' "$log" | median)
    wall=$(awk '{print $3}' "$log" | median)
    echo "cpu $cpu s, wall $wall s"
}
for args in "--help" "list" "--version" "models path smollm2"; do
    # shellcheck disable=SC2086
    echo "memgauge $args: before $(count "$before" $args); $(timed "$before" $args) | after $(count "$after" $args); $(timed "$after" $args)"
done
