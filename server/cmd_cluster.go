package server

// clusterCommands is CLUSTER as a Redis 7.0 server started without
// cluster-enabled has it: the command and its subcommands exist (COMMAND,
// ACL rules), and every one of them answers that cluster support is
// disabled.
func clusterCommands() []*Command {
	return []*Command{
		{Name: "cluster", Arity: -2, Group: "cluster", Since: "3.0.0", Summary: "A container for Redis Cluster commands.", Complexity: "Depends on subcommand.", Categories: "slow", Subs: []*Command{
			{Name: "addslots", Arity: -3, Flags: FlagAdmin | FlagStale, Since: "3.0.0", Summary: "Assign new hash slots to receiving node", Complexity: "O(N) where N is the total number of hash slot arguments", Categories: "admin slow dangerous", Handler: cmdCluster},
			{Name: "addslotsrange", Arity: -4, Flags: FlagAdmin | FlagStale, Since: "7.0.0", Summary: "Assign new hash slots to receiving node", Complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.", Categories: "admin slow dangerous", Handler: cmdCluster},
			{Name: "bumpepoch", Arity: 2, Flags: FlagAdmin | FlagStale, Since: "3.0.0", Summary: "Advance the cluster config epoch", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdCluster},
			{Name: "count-failure-reports", Arity: 3, Flags: FlagAdmin | FlagStale, Since: "3.0.0", Summary: "Return the number of failure reports active for a given node", Complexity: "O(N) where N is the number of failure reports", Categories: "admin slow dangerous", Handler: cmdCluster},
			{Name: "countkeysinslot", Arity: 3, Flags: FlagStale, Since: "3.0.0", Summary: "Return the number of local keys in the specified hash slot", Complexity: "O(1)", Categories: "slow", Handler: cmdCluster},
			{Name: "delslots", Arity: -3, Flags: FlagAdmin | FlagStale, Since: "3.0.0", Summary: "Set hash slots as unbound in receiving node", Complexity: "O(N) where N is the total number of hash slot arguments", Categories: "admin slow dangerous", Handler: cmdCluster},
			{Name: "delslotsrange", Arity: -4, Flags: FlagAdmin | FlagStale, Since: "7.0.0", Summary: "Set hash slots as unbound in receiving node", Complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.", Categories: "admin slow dangerous", Handler: cmdCluster},
			{Name: "failover", Arity: -2, Flags: FlagAdmin | FlagStale, Since: "3.0.0", Summary: "Forces a replica to perform a manual failover of its master.", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdCluster},
			{Name: "flushslots", Arity: 2, Flags: FlagAdmin | FlagStale, Since: "3.0.0", Summary: "Delete a node's own slots information", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdCluster},
			{Name: "forget", Arity: 3, Flags: FlagAdmin | FlagStale, Since: "3.0.0", Summary: "Remove a node from the nodes table", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdCluster},
			{Name: "getkeysinslot", Arity: 4, Flags: FlagStale, Since: "3.0.0", Summary: "Return local key names in the specified hash slot", Complexity: "O(log(N)) where N is the number of requested keys", Categories: "slow", Handler: cmdCluster},
			{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, Since: "5.0.0", Summary: "Show helpful text about the different subcommands", Complexity: "O(1)", Categories: "slow", Handler: cmdCluster},
			{Name: "info", Arity: 2, Flags: FlagStale, Since: "3.0.0", Summary: "Provides info about Redis Cluster node state", Complexity: "O(1)", Categories: "slow", Handler: cmdCluster},
			{Name: "keyslot", Arity: 3, Flags: FlagStale, Since: "3.0.0", Summary: "Returns the hash slot of the specified key", Complexity: "O(N) where N is the number of bytes in the key", Categories: "slow", Handler: cmdCluster},
			{Name: "links", Arity: 2, Flags: FlagStale, Since: "7.0.0", Summary: "Returns a list of all TCP links to and from peer nodes in cluster", Complexity: "O(N) where N is the total number of Cluster nodes", Categories: "slow", Handler: cmdCluster},
			{Name: "meet", Arity: -4, Flags: FlagAdmin | FlagStale, Since: "3.0.0", Summary: "Force a node cluster to handshake with another node", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdCluster},
			{Name: "myid", Arity: 2, Flags: FlagStale, Since: "3.0.0", Summary: "Return the node id", Complexity: "O(1)", Categories: "slow", Handler: cmdCluster},
			{Name: "nodes", Arity: 2, Flags: FlagStale, Since: "3.0.0", Summary: "Get Cluster config for the node", Complexity: "O(N) where N is the total number of Cluster nodes", Categories: "slow", Handler: cmdCluster},
			{Name: "replicas", Arity: 3, Flags: FlagAdmin | FlagStale, Since: "5.0.0", Summary: "List replica nodes of the specified master node", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdCluster},
			{Name: "replicate", Arity: 3, Flags: FlagAdmin | FlagStale, Since: "3.0.0", Summary: "Reconfigure a node as a replica of the specified master node", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdCluster},
			{Name: "reset", Arity: -2, Flags: FlagAdmin | FlagNoScript | FlagStale, Since: "3.0.0", Summary: "Reset a Redis Cluster node", Complexity: "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.", Categories: "admin slow dangerous", Handler: cmdCluster},
			{Name: "saveconfig", Arity: 2, Flags: FlagAdmin | FlagStale, Since: "3.0.0", Summary: "Forces the node to save cluster state on disk", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdCluster},
			{Name: "set-config-epoch", Arity: 3, Flags: FlagAdmin | FlagStale, Since: "3.0.0", Summary: "Set the configuration epoch in a new node", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdCluster},
			{Name: "setslot", Arity: -4, Flags: FlagAdmin | FlagStale, Since: "3.0.0", Summary: "Bind a hash slot to a specific node", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdCluster},
			{Name: "shards", Arity: 2, Flags: FlagStale, Since: "7.0.0", Summary: "Get array of cluster slots to node mappings", Complexity: "O(N) where N is the total number of cluster nodes", Categories: "slow", Handler: cmdCluster},
			{Name: "slaves", Arity: 3, Flags: FlagAdmin | FlagStale, Since: "3.0.0", Summary: "List replica nodes of the specified master node", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdCluster},
			{Name: "slots", Arity: 2, Flags: FlagStale, Since: "3.0.0", Summary: "Get array of Cluster slot to node mappings", Complexity: "O(N) where N is the total number of Cluster nodes", Categories: "slow", Handler: cmdCluster},
		}},
	}
}

func cmdCluster(s *Session) { s.W.Error("ERR This instance has cluster support disabled") }
