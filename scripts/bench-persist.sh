#!/usr/bin/env bash
# Persistence side by side: SAVE time, snapshot size and restart (load) time
# for 1 000 000 keys of 16-byte values, recached against redis-server; then
# SET throughput and CPU with the append-only log at everysec on both.
set -euo pipefail
cd "$(dirname "$0")/.."
KEYS="${PERSIST_KEYS:-1000000}"
go build -o bin/recached ./cmd/recached
go build -o bin/persistbench ./bench/persist
go build -o bin/redisbench ./bench/redisbench
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
work=$(mktemp -d)
trap 'pkill -f "$work" 2>/dev/null || true; rm -rf "$work"' EXIT

stop() { # pid: SIGKILL (the snapshot is already saved) and wait for it to go
	kill -9 "$1" 2>/dev/null || true
	while kill -0 "$1" 2>/dev/null; do sleep 0.05; done
}

start() { # name dir port
	case "$1" in
	recached) bin/recached --port "$3" --ws-port 0 --dir "$2" --appendonly no --save "" >>"$2/log" 2>&1 & ;;
	redis) redis-server --port "$3" --bind 127.0.0.1 --dir "$2" --appendonly no --save "" >>"$2/log" 2>&1 & ;;
	esac
	echo $!
}

for name in recached redis; do
	dir="$work/$name"; mkdir -p "$dir"
	port=$(free_port)
	pid=$(start "$name" "$dir" "$port")
	bin/persistbench -addr "127.0.0.1:$port" -mode waitload -n 0 -timeout 20s >/dev/null
	bin/persistbench -addr "127.0.0.1:$port" -mode fill -n "$KEYS" >/dev/null
	save=$(bin/persistbench -addr "127.0.0.1:$port" -mode save | awk '{print $2}')
	stop "$pid"
	size=$(stat -c %s "$dir"/dump.r* | head -1)
	t0=$(date +%s.%N)
	pid=$(start "$name" "$dir" "$port")
	bin/persistbench -addr "127.0.0.1:$port" -mode waitload -n "$KEYS" -timeout 60s >/dev/null
	t1=$(date +%s.%N)
	stop "$pid"
	printf '%-9s SAVE %6.3f s   file %6.1f MB   restart until %d keys served %6.3f s\n' \
		"$name" "$save" "$(echo "$size / 1000000" | bc -l)" "$KEYS" "$(echo "$t1 - $t0" | bc -l)"
done

echo
echo "== SET with the append-only log at everysec on both servers"
bin/redisbench -recached bin/recached -rounds "${ROUNDS:-3}" -tests set -memkeys 0 -aof everysec
