package server

// syncCommands are the sync protocol's commands (SYNC, QSUB, KWATCH, …).
func syncCommands() []*Command { return nil }
