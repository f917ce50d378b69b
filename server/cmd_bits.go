package server

// bitCommands are the bit-level string commands.
func bitCommands() []*Command { return nil }
