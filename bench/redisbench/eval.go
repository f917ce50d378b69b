package main

import (
	"crypto/sha1"
	"encoding/hex"
)

// incrScript is the script of the EVAL rows, as the benchmark
// writes it.
const incrScript = "return redis.call('incr',KEYS[1])"

// evalRows are the scripting rows at pipeline 16: EVAL of a one-INCR
// script, which hashes the body on every call, and EVALSHA of the same
// script, loaded into each server before the row runs.
func evalRows(scale int) []row {
	load := []string{"SCRIPT", "LOAD", `"` + incrScript + `"`}
	sum := sha1.Sum([]byte(incrScript)) // the digest SCRIPT LOAD answers
	sha := hex.EncodeToString(sum[:])
	return []row{
		{test: "eval incr", clients: 50, pipeline: 16, threads: 1, n: 200000 / scale, extra: []string{"eval", incrScript, "1", "k"}},
		{test: "evalsha incr", clients: 50, pipeline: 16, threads: 1, n: 200000 / scale, setup: load, extra: []string{"evalsha", sha, "1", "k"}},
	}
}
