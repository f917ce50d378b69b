package server

// pubsubCommands are the publish/subscribe commands.
func pubsubCommands() []*Command { return nil }
