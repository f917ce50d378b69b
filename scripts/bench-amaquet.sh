#!/usr/bin/env bash
# Amaquet (one connection, 64 requests in flight, answered out of order)
# against redis-server (one RESP connection at pipeline 64): GET/SET
# throughput and server CPU per request, then GET latency while 32 BLPOPs
# on the same Amaquet connection stay blocked.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/recached ./cmd/recached
go build -o bin/amaquetbench ./bench/amaquet
bin/amaquetbench -recached bin/recached -rounds "${ROUNDS:-3}" "$@"
