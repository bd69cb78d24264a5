#!/bin/sh
# iolab's start-up experiment inside LAVA's test shell; lava/iolab-startup.yaml
# runs it. LAVA joins a definition's steps into one run.sh and runs it with
# `sh -e`, so a failing command would end the test run before its result is
# reported and before the machine is restored. This script therefore never
# fails: every failure becomes a failed test case (exit code as its
# measurement) after a log line `iolab-lava: <reason>`, and `iolab restore`
# runs on every path, an error or a signal included.
#
# Parameters (environment, from the definition's params): IOLAB_URL, REPS,
# BW, TIMEOUT, WARMUP, SCALE, WORKDIR.

WORK="${WORKDIR:-/var/tmp/iolab-lava}"
say() { echo "iolab-lava: $*"; }

# fail CASE CODE REASON: a failed test case, its reason on the line before.
fail() {
    say "$1 failed: $3"
    lava-test-case "$1" --result fail --measurement "$2" --units exit-code
}

if ! mkdir -p "$WORK"; then
    fail iolab-setup 1 "cannot create WORKDIR $WORK"
    exit 0
fi
DB="$WORK/results.db"
rm -f "$DB" "$DB-wal" "$DB-shm"

IOLAB=iolab
if [ -n "${IOLAB_URL:-}" ]; then
    if ! { wget -q -O "$WORK/iolab" "$IOLAB_URL" 2>/dev/null ||
        curl -fsSL -o "$WORK/iolab" "$IOLAB_URL"; }; then
        fail iolab-setup 1 "cannot download IOLAB_URL=$IOLAB_URL"
        exit 0
    fi
    chmod +x "$WORK/iolab"
    IOLAB="$WORK/iolab"
fi
if ! VERSION=$("$IOLAB" --version 2>&1); then
    fail iolab-setup 1 "$IOLAB does not run here: $VERSION"
    exit 0
fi

# Restore on every path: normal end, error, Ctrl-C or the job's timeout
# (LAVA ends the shell with a signal).
restore() {
    "$IOLAB" restore >"$WORK/restore.log" 2>&1 || say "iolab restore: $(tail -n 1 "$WORK/restore.log")"
}
trap restore EXIT
trap 'exit 130' INT TERM HUP

# What ran where: references in the results (no spaces: LAVA splits there).
token() { printf '%s' "$*" | tr -cs 'A-Za-z0-9._:+-' '_'; }
MODEL=$(cat /proc/device-tree/model 2>/dev/null || cat /sys/class/dmi/id/product_name 2>/dev/null || echo unknown)
say "version: $VERSION"
say "machine: $(uname -n) $(uname -r) $(uname -m) $MODEL"
lava-test-reference iolab-version --result pass --reference "$(token "$VERSION")"
lava-test-reference machine --result pass --reference "$(token "$(uname -n) linux-$(uname -r) $(uname -m) $MODEL")"

"$IOLAB" demo --reps "${REPS:-3}" --bw "${BW:-40MiB/s}" --timeout "${TIMEOUT:-5}" \
    --warmup "${WARMUP:-2}" --scale "${SCALE:-1}" --db "$DB" --json \
    >"$WORK/demo.json" 2>"$WORK/demo.err"
rc=$?
if [ "$rc" -eq 0 ]; then
    lava-test-case iolab-demo --result pass
else
    fail iolab-demo "$rc" "$(tail -n 1 "$WORK/demo.err")"
fi

# The run's own experiment (a failed run may still have stored cells).
ID=$("$IOLAB" results list --json --db "$DB" 2>/dev/null |
    tr ',{' '\n\n' | sed -n 's/^ *"id": *\([0-9][0-9]*\).*/\1/p' | tail -n 1)
if [ -n "$ID" ]; then
    # One test set per workload, one case per cell and metric.
    if ! "$IOLAB" results export "$ID" --db "$DB" --format lava >"$WORK/lava.txt" 2>"$WORK/export.err"; then
        fail iolab-export 1 "$(tail -n 1 "$WORK/export.err")"
    fi
    cat "$WORK/lava.txt"
    # The database goes home with the job: a lab collects it from here.
    lava-test-reference iolab-results --result pass --reference "file://$DB"
    say "results: experiment $ID in $DB"
fi
exit 0
