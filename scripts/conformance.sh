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
#      remote url upstream), driven by internal/e2e/testdata/confclient.
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=$(mktemp -d)
gw_pid=""
cleanup() {
  if [ -n "$gw_pid" ]; then kill "$gw_pid" 2>/dev/null || true; wait "$gw_pid" 2>/dev/null || true; fi
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
[ $status -eq 0 ] && echo "conformance: all passed"
exit $status
