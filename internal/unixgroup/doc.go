// Package unixgroup resolves a Unix group given in a config file, by name
// or by numeric ID, to its ID, for the files the agent gives to a group
// (the node API socket, the memif socket directories).
//
// It only reads the host's group database; it changes no file.
package unixgroup
