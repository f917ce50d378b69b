package keyspace

// SampleTTL looks at up to limit keys with a time to live in shard i, which
// the caller has locked, and returns the sum of the milliseconds they have
// left and how many of them have not expired yet. INFO keyspace's avg_ttl
// is estimated from such samples, as Redis estimates it from the keys its
// expiry cycle looks at.
func (db *DB) SampleTTL(i, limit int) (sum int64, n int) {
	s := &db.shards[i]
	now := db.ks.Now()
	seen := 0
	for _, at := range s.exp {
		if seen >= limit {
			break
		}
		seen++
		if at > now {
			sum += at - now
			n++
		}
	}
	return sum, n
}
