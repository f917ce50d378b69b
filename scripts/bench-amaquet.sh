#!/usr/bin/env bash
# Amaquet (one connection, 64 requests in flight, answered out of order)
# against redis-server (one RESP connection at pipeline 64): GET/SET
# throughput and server CPU per request, then GET latency while 32 BLPOPs
# on the same Amaquet connection stay blocked.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/recached ./cmd/recached
go build -o bin/amaquetbench ./bench/amaquet
if [ -n "${PIN:-}" ]; then
	# PIN=1: servers on CPU 0, the clients on CPU 1 (a quiet machine only).
	exec taskset -c 1 bin/amaquetbench -recached bin/recached -rounds "${ROUNDS:-3}" -server-cpu 0 "$@"
fi
bin/amaquetbench -recached bin/recached -rounds "${ROUNDS:-3}" "$@"
