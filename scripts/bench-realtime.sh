#!/usr/bin/env bash
# The realtime protocol side by side with Centrifugo (github.com/centrifugal/centrifugo/v6,
# built here with `go install` into a temporary GOBIN, never a dependency of
# the product): fan-out of one channel to 1 000 and 5 000 subscribers and
# 10 000 idle connections, both servers started by bench/realtime with the
# same GOMAXPROCS, ROUNDS times (default 3) in rotated order, medians in
# the summary. REALTIME_SUBS, REALTIME_IDLE and REALTIME_MESSAGES scale
# it down; CENTRIFUGO_VERSION picks the release (CENTRIFUGO_BIN skips the build).
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/recached ./cmd/recached
go build -o bin/realtimebench ./bench/realtime
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
centrifugo=${CENTRIFUGO_BIN:-}
if [ -z "$centrifugo" ]; then
	echo "building centrifugo ${CENTRIFUGO_VERSION:-v6.9.1} (go install into a temporary GOBIN)"
	(cd "$tmp" && GOBIN="$tmp/bin" GOFLAGS= go install "github.com/centrifugal/centrifugo/v6@${CENTRIFUGO_VERSION:-v6.9.1}")
	centrifugo="$tmp/bin/centrifugo"
fi
# 10 000 connections and both ends of each in this process tree.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
bin/realtimebench -recached bin/recached -centrifugo "$centrifugo" \
	-subs "${REALTIME_SUBS:-1000,5000}" -idle "${REALTIME_IDLE:-10000}" -messages "${REALTIME_MESSAGES:-0}" -rounds "${ROUNDS:-3}"
