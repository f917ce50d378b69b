package main

// incrScript is the script of the EVAL rows, as the benchmark
// writes it.
const incrScript = "return redis.call('incr',KEYS[1])"

// incrSHA is incrScript's SHA1, which the EVALSHA row calls after loading
// it (SCRIPT LOAD answers the same digest on both servers).
const incrSHA = "2c8193be8e76bacf1c822c5ab16440a7c2a61441"

// evalRows are the scripting rows at pipeline 16: EVAL of a one-INCR
// script, which hashes the body on every call, and EVALSHA of the same
// script, loaded into each server before the row runs.
func evalRows(scale int) []row {
	load := []string{"SCRIPT", "LOAD", `"` + incrScript + `"`}
	return []row{
		{test: "eval incr", clients: 50, pipeline: 16, threads: 1, n: 200000 / scale, extra: []string{"eval", incrScript, "1", "k"}},
		{test: "evalsha incr", clients: 50, pipeline: 16, threads: 1, n: 200000 / scale, setup: load, extra: []string{"evalsha", incrSHA, "1", "k"}},
	}
}
