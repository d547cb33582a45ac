// Package config holds the device manager's configuration: its keys, their
// defaults and validation. Reading the YAML config file is configfile's.
//
// Every key is documented on its Config field and in devicemanager.conf. An
// invalid value is an error that names the key, so the agent stops at start
// with a message the operator can act on. The package reads the
// filesystem only to resolve the optional directory group (ResolveGroup)
// and to follow the links in checkpoint-path (ResolveLinks): the
// checkpoint must not land under the socket root or kubelet's directories
// as it is written nor where its links lead.
package config
