package server

// zsetCommands are the sorted set commands.
func zsetCommands() []*Command { return nil }
