# recached: the habits of the project, one target each.
GO      ?= go
BIN     := bin/recached
PKGS    := ./...

.PHONY: all build run test test-deps unit race fuzz bench vet fmt check clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/recached

# Build and serve on the defaults: RESP on 127.0.0.1:6379, WebSocket on :6380.
run: build
	./$(BIN)

# Install what the tests need (Debian packages) when missing, then run every test.
test: test-deps vet unit race

test-deps:
	./scripts/install-test-deps.sh

unit:
	$(GO) test -count=1 -timeout 30m $(PKGS)
	node --test sync/web/test/

# Every package again under the race detector.
race:
	$(GO) test -count=1 -race -timeout 30m $(PKGS)

# Short coverage-guided fuzzing of the parsers; `make test` already runs
# their seed corpora.
fuzz:
	$(GO) test ./resp -run XXX -fuzz FuzzParse -fuzztime 60s
	$(GO) test ./resp -run XXX -fuzz FuzzSplitArgs -fuzztime 30s

# Side-by-side benchmarks against redis-server (see scripts/bench.sh).
bench: build test-deps
	./scripts/bench.sh

vet:
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
