package snapshot

import (
	"fmt"

	"github.com/recached/recached/server/keyspace"
)

// addSampleLists adds list values to the sample keyspace.
func addSampleLists(db *keyspace.DB) {}

// describeOther renders values of types describeValue does not know.
func describeOther(e *keyspace.Entry) []string { return []string{fmt.Sprintf("%T", e.Obj)} }
