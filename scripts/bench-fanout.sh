#!/usr/bin/env bash
# Sync-push fan-out over the WebSocket bridge (no Redis equivalent): 1 000
# WebSocket clients on their own patterns plus 100 on a shared one, writers
# over TCP at full speed and at 10 000 writes/s.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/recached ./cmd/recached
go build -o bin/fanoutbench ./bench/fanout
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
wsport=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
dir=$(mktemp -d)
ulimit -n 65536 2>/dev/null || true
bin/recached --port "$port" --ws-port "$wsport" --appendonly no --save "" --dir "$dir" >"$dir/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
	sleep 0.1
done
bin/fanoutbench -tcp "127.0.0.1:$port" -ws "127.0.0.1:$wsport" -duration "${FANOUT_SECONDS:-5}s"
