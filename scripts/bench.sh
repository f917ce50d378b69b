#!/usr/bin/env bash
# Side-by-side benchmarks of recached against redis-server on this machine.
# Every row runs both servers with the same flags, in rounds with the order
# rotated; compare ratios and CPU per request, not absolute numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${ROUNDS:-3}"
mkdir -p bin
go build -o bin/recached ./cmd/recached
go build -o bin/redisbench ./bench/redisbench
go build -o bin/pubsubbench ./bench/pubsub

echo "== redis-benchmark: strings and collections at pipeline 1 and 16 (the CPU rows of issue 20), then RPOP, LRANGE, streams, HyperLogLog, GEO, the float increments and PUBLISH (to one channel, then to random ones of a million, which the channel history keeps) at pipeline 16; pub/sub fan-out; the memory table (strings, hash, set, zset, list, stream, and a million channels in the history)"
./bin/redisbench -recached bin/recached -rounds "$ROUNDS" \
	-tests ping_mbulk,set,get,incr,mset,lpush,hset,sadd,zadd \
	-more rpop,lrange_100 \
	-datatypes \
	-memtypes \
	-memchannels 1000000 \
	-evict \
	-eval \
	-cmd "pfadd|PFADD hll e:__rand_int__" -cmd "pfadd new key|PFADD hll:__rand_int__ __rand_int__" \
	-cmd "pfcount|PFCOUNT hll" \
	-cmd "incrbyfloat|INCRBYFLOAT f:__rand_int__ 1.5" -cmd "hincrbyfloat|HINCRBYFLOAT h f:__rand_int__ 0.1" \
	-cmd "publish|PUBLISH news hello" -cmd "publish new channel|PUBLISH ch:__rand_int__ hello" \
	-ext "pubsub fan-out 200 subs P=1|deliveries|bin/pubsubbench -subs 200 -messages 20000 -pipeline 1" \
	-ext "pubsub fan-out 200 subs P=16|deliveries|bin/pubsubbench -subs 200 -messages 50000 -pipeline 16" \
	"$@"

for prog in pubsub fanout persist amaquet realtime rdb repl; do
	if [ -f "bench/$prog/main.go" ] && [ -x "scripts/bench-$prog.sh" ]; then
		echo
		echo "== $prog"
		"./scripts/bench-$prog.sh"
	fi
done
