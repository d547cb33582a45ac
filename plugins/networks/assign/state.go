package assign

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/contivpp/memif-agent/internal/securedir"
	"github.com/contivpp/memif-agent/plugins/networks/ipam"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
)

// stateVersion is the format of the state file.
const stateVersion = 1

// maxStateBytes bounds the state file: a record per allocation and a
// lease per memif, a few hundred bytes each.
const maxStateBytes = 16 << 20

// State is what the state file holds.
type State struct {
	Version int `json:"version"`
	// Applied is the networks in force.
	Applied netconf.Config `json:"applied"`
	// Allocations are the records by allocation ID.
	Allocations map[string]Record `json:"allocations"`
	// Addresses are the l3 networks' leases.
	Addresses ipam.State `json:"addresses"`
}

// stateFile is the state's file, in a directory only the agent changes.
type stateFile struct {
	path string
}

func (f *stateFile) openDir() (*securedir.Dir, error) {
	return securedir.Open(filepath.Dir(f.path), securedir.Options{Create: true, Mode: 0o700, Group: securedir.NoGroup})
}

// read returns the state; a missing file is an empty state.
func (f *stateFile) read() (State, error) {
	dir, err := f.openDir()
	if err != nil {
		return State{}, fmt.Errorf("networks state %s: %w", f.path, err)
	}
	defer dir.Close()
	file, err := dir.OpenFile(filepath.Base(f.path), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return State{Version: stateVersion}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("networks state %s: %w", f.path, err)
	}
	defer file.Close()
	var content bytes.Buffer
	if _, err := content.ReadFrom(io.LimitReader(file, maxStateBytes+1)); err != nil {
		return State{}, fmt.Errorf("networks state %s: %w", f.path, err)
	}
	if content.Len() > maxStateBytes {
		return State{}, fmt.Errorf("networks state %s: larger than %d bytes", f.path, maxStateBytes)
	}
	decoder := json.NewDecoder(&content)
	decoder.DisallowUnknownFields()
	var state State
	if err := decoder.Decode(&state); err != nil {
		return State{}, fmt.Errorf("networks state %s: %w", f.path, err)
	}
	if state.Version != stateVersion {
		return State{}, fmt.Errorf("networks state %s: version %d, this agent reads version %d", f.path, state.Version, stateVersion)
	}
	return state, nil
}

// write replaces the file by state atomically and durably.
func (f *stateFile) write(state State) error {
	content, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("networks state %s: %w", f.path, err)
	}
	dir, err := f.openDir()
	if err != nil {
		return fmt.Errorf("networks state %s: %w", f.path, err)
	}
	defer dir.Close()
	var suffix [8]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return err
	}
	temp := "." + filepath.Base(f.path) + ".tmp-" + hex.EncodeToString(suffix[:])
	file, err := dir.OpenFile(temp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("networks state %s: %w", f.path, err)
	}
	_, err = file.Write(content)
	if err == nil {
		err = file.Sync()
	}
	err = errors.Join(err, file.Close())
	if err == nil {
		err = dir.Rename(temp, filepath.Base(f.path))
	}
	if err != nil {
		return errors.Join(fmt.Errorf("networks state %s: %w", f.path, err), dir.Remove(temp))
	}
	if err := dir.Sync(); err != nil {
		return fmt.Errorf("networks state %s: %w", f.path, err)
	}
	return nil
}
