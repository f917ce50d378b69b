package server

// hashCommands are the hash commands.
func hashCommands() []*Command { return nil }
