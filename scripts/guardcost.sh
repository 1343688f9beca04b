#!/usr/bin/env bash
# Measures a local guardrail's cost side by side with the commits before it
# (docs/guardrails.md#cost): BenchmarkGuardrailCost (internal/pipeline) runs at HEAD
# and, with its base file (guardcost_base_bench_test.go) copied in alone, at
# BEFORE_GUARD (the commit before the guardrails: tools/call without any) and at
# BEFORE_LIST (the commit before the tools/list guardrail: a listing without any).
# The three test binaries run one after another, ROUNDS times, so a shared machine's
# load falls on every side alike; the summary gives each side's median wall ns/op and
# CPU ns/op (the process's, every thread), and the median over rounds of each ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}
benchtime=${BENCHTIME:-2000x}
before_guard=${BEFORE_GUARD:-b737f78^}
before_list=${BEFORE_LIST:-7c577bb^}
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/wt" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

build() { # commit output
  git worktree add -q --detach "$tmp/wt" "$1"
  cp internal/pipeline/guardcost_base_bench_test.go "$tmp/wt/internal/pipeline/"
  (cd "$tmp/wt" && go test -c -o "$2" ./internal/pipeline/)
  git worktree remove --force "$tmp/wt"
}
echo "building HEAD ($(git rev-parse --short HEAD)), $before_guard ($(git rev-parse --short "$before_guard")), $before_list ($(git rev-parse --short "$before_list"))" >&2
go test -c -o "$tmp/head.test" ./internal/pipeline/
build "$before_guard" "$tmp/guard.test"
build "$before_list" "$tmp/list.test"

run() { # label binary bench-regexp round
  "$2" -test.run '^$' -test.bench "$3" -test.benchtime "$benchtime" -test.benchmem |
    awk -v side="$1" -v round="$4" '/^BenchmarkGuardrailCost\// {
      sub(/-[0-9]+$/, "", $1); sub(/^BenchmarkGuardrailCost\//, "", $1)
      cpu = ""; for (i = 4; i <= NF; i++) if ($i == "cpu-ns/op") cpu = $(i - 1)
      print round, side "/" $1, $3, cpu }'
}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq "$rounds"); do
  run before "$tmp/guard.test" 'BenchmarkGuardrailCost/call/none$' "$r"
  run head "$tmp/head.test" 'BenchmarkGuardrailCost/' "$r"
  run before "$tmp/list.test" 'BenchmarkGuardrailCost/list/none$' "$r"
done | tee "$tmp/raw" >&2
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

awk '
function median(list,   n, a, i, j, t) {
  n = split(list, a, " ")
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ w[$1, $2] = $3; c[$1, $2] = $4; wall[$2] = wall[$2] " " $3; cpu[$2] = cpu[$2] " " $4; if ($1 > rounds) rounds = $1 }
END {
  printf "%-28s %14s %14s\n", "side", "wall ns/op", "cpu ns/op"
  n = split("before/call/none head/call/none head/call/generic before/list/none head/list/none head/list/nocache head/list/cache", sides, " ")
  for (i = 1; i <= n; i++) printf "%-28s %14.0f %14.0f\n", sides[i], median(wall[sides[i]]), median(cpu[sides[i]])
  n = split("head/call/none:before/call/none head/call/generic:before/call/none head/call/generic:head/call/none head/list/cache:head/list/nocache head/list/nocache:before/list/none head/list/cache:before/list/none", pairs, " ")
  printf "\n%-46s %6s %6s  %s\n", "ratio (median over rounds)", "wall", "cpu", "cpu per round"
  for (i = 1; i <= n; i++) {
    split(pairs[i], p, ":"); rw = ""; rc = ""
    for (r = 1; r <= rounds; r++) if ((r, p[1]) in w && (r, p[2]) in w) {
      rw = rw " " sprintf("%.2f", w[r, p[1]] / w[r, p[2]]); rc = rc " " sprintf("%.2f", c[r, p[1]] / c[r, p[2]])
    }
    printf "%-46s %6.2f %6.2f %s\n", p[1] " / " p[2], median(rw), median(rc), rc
  }
}' "$tmp/raw"
