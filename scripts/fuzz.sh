#!/usr/bin/env bash
# Runs every fuzz target of the module (each `func FuzzX` in a _test.go
# file) for FUZZTIME (default 20s) of coverage-guided fuzzing. `make test`
# already runs each target's seed corpus; this looks for new inputs.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-20s}"
go="${GO:-go}"
found=0
while IFS=: read -r file _ decl; do
	name="${decl#func }"
	name="${name%%(*}"
	pkg="./$(dirname "$file")"
	echo "== $pkg $name ($fuzztime)"
	"$go" test "$pkg" -run XXX -fuzz "^${name}\$" -fuzztime "$fuzztime"
	found=$((found + 1))
done < <(git grep -n '^func Fuzz[A-Za-z0-9_]*(f \*testing.F)' -- '*_test.go')
echo "fuzzed $found targets"
