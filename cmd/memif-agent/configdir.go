package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/ligato/cn-infra/config"
	"github.com/namsral/flag"

	"github.com/contivpp/memif-agent/internal/agentwiring"
)

// configDirUsage is -config-dir's help.
const configDirUsage = "Directory of the plugins' config files (<plugin>.conf); also $CONFIG_DIR. " +
	"Given, it must exist: a missing one stops the agent. Not given, no directory is read and every plugin runs on its built-in defaults"

// defineConfigDirFlag declares -config-dir in place of cn-infra's, whose
// default is the working directory: with no -config-dir the agent reads no
// directory at all, rather than whatever files the directory it was
// started in holds.
func defineConfigDirFlag() {
	flag.CommandLine.String(config.DirFlag, "", configDirUsage)
}

// checkConfigDir refuses a -config-dir (or $CONFIG_DIR) that was given but
// is not a directory: an agent that started on every default because its
// config dir was misspelt or not mounted would take over the node's
// default paths (kubelet's plugin dir, /var/lib/memif-agent, the socket
// root) with settings nobody chose.
func checkConfigDir() error {
	given := false
	flag.CommandLine.Visit(func(f *flag.Flag) { given = given || f.Name == config.DirFlag })
	if !given {
		return nil
	}
	dir := agentwiring.FlagValue(config.DirFlag)
	if dir == "" {
		return fmt.Errorf("-config-dir is empty; name the directory of the config files, or leave -config-dir (and $CONFIG_DIR) out to run on the built-in defaults")
	}
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("-config-dir %s does not exist; create it with the config files (or mount the ConfigMap there), or leave -config-dir out to run on the built-in defaults", dir)
	case err != nil:
		return fmt.Errorf("-config-dir %s: %w", dir, err)
	case !info.IsDir():
		return fmt.Errorf("-config-dir %s is not a directory; name the directory that holds the config files", dir)
	}
	return nil
}
