# recached: the habits of the project, one target each.
GO      ?= go
BIN     := bin/recached
PKGS    := ./...

.PHONY: all build run test test-deps unit race fuzz bench vet lint fmt check clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/recached

# Build and serve on the defaults: RESP on 127.0.0.1:6379, WebSocket on :6380.
run: build
	./$(BIN)

# Install what the tests need (Debian packages) when missing, then run every test.
test: test-deps lint unit race

test-deps:
	./scripts/install-test-deps.sh

unit:
	@command -v redis-server >/dev/null && echo "differential tests against: $$(redis-server --version)" || echo "redis-server not installed: differential tests will skip (fail under CI)"
	$(GO) test -count=1 -timeout 30m $(PKGS)
	node --test sync/web/test/
	node --experimental-websocket --test sync/realtime/web/test/

# Every package again under the race detector.
race:
	$(GO) test -count=1 -race -timeout 30m $(PKGS)

# Short coverage-guided fuzzing of every fuzz target in the module
# (FUZZTIME each, default 20s); `make test` already runs their seed corpora.
fuzz:
	GO=$(GO) ./scripts/fuzz.sh

# Side-by-side benchmarks against redis-server (see scripts/bench.sh).
bench: build test-deps
	./scripts/bench.sh

vet:
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi

# staticcheck (installed at the version pinned here when missing) and go vet.
STATICCHECK_VERSION := v0.8.2
lint: vet
	@command -v staticcheck >/dev/null || test -x "$$($(GO) env GOPATH)/bin/staticcheck" || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" staticcheck $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
