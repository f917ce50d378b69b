#!/usr/bin/env bash
# Starting on a Redis dump: the time until every key of a 1 000 000-key
# dump.rdb (written by redis-server) is served, and the resident memory,
# recached against redis-server loading the same file.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/recached ./cmd/recached
go build -o bin/rdbbench ./bench/rdb
bin/rdbbench -recached bin/recached -keys "${RDB_KEYS:-1000000}" -rounds "${ROUNDS:-3}"
