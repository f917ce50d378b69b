#!/usr/bin/env bash
# Replication: the primary's CPU per SET at pipeline 16 with one replica
# attached, and a full sync of 1 000 000 keys, a recached primary and
# replica against a redis-server primary and replica in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/recached ./cmd/recached
go build -o bin/replbench ./bench/repl
bin/replbench -recached bin/recached -requests "${REPL_REQUESTS:-1000000}" -keys "${REPL_KEYS:-1000000}" -rounds "${ROUNDS:-3}"
