package server

// setCommands are the set commands.
func setCommands() []*Command { return nil }
