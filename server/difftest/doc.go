// Package difftest runs command scripts against a real redis-server and
// recached side by side and compares the replies byte for byte, in RESP2 and
// RESP3. The scripts live in testdata/*.txt, one command per line in
// redis-cli's quoting; see diff_test.go for the directives.
package difftest
