// Package unixgroup owns the Unix groups config files name (the node API
// socket's socket-group, the memif socket directories' dir-group): the
// values a group key accepts (Group: a name or a numeric ID) and their
// resolution to an ID.
//
// It only reads the host's group database; it changes no file.
package unixgroup
