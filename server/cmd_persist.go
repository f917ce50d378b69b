package server

// persistCommands are the persistence commands (SAVE, BGSAVE, …).
func persistCommands() []*Command { return nil }
