package assign

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/contivpp/memif-agent/internal/securedir"
	"github.com/contivpp/memif-agent/plugins/networks/ipam"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
)

// stateVersion is the format of the state file.
const stateVersion = 1

// maxStateBytes bounds the state file: a record per allocation and a
// lease per memif, a few hundred bytes each.
const maxStateBytes = 16 << 20

// State is what the state file holds. Its format is the one agents of
// before read too (strictly, refusing any field they do not know), so
// that a rollback keeps the node's records: the records' origins are kept
// in the origins file beside it.
type State struct {
	Version int `json:"version"`
	// Applied is the networks in force.
	Applied netconf.Config `json:"applied"`
	// Allocations are the records by allocation ID.
	Allocations map[string]Record `json:"allocations"`
	// Addresses are the l3 networks' leases.
	Addresses ipam.State `json:"addresses"`
}

// originsVersion is the format of the origins file.
const originsVersion = 1

// originsFile is what the origins file holds: the records' origins, by
// allocation ID.
type originsFile struct {
	Version     int                          `json:"version"`
	Allocations map[string]allocationOrigins `json:"allocations"`
}

// allocationOrigins are the origins of one allocation's memifs, by memif
// ID, and its pod, so that they are taken only for the record they were
// written with.
type allocationOrigins struct {
	Pod     string   `json:"pod"`
	Origins []Origin `json:"origins"`
}

// originsOf returns the origins of state's records.
func originsOf(state State) originsFile {
	file := originsFile{Version: originsVersion, Allocations: map[string]allocationOrigins{}}
	for id, record := range state.Allocations {
		if len(record.Origins) > 0 {
			file.Allocations[id] = allocationOrigins{Pod: record.Pod, Origins: record.Origins}
		}
	}
	return file
}

// apply gives the records of allocations the origins kept for them. A
// record the file does not know, or knows with another pod or another
// number of memifs (the file is older than the records), keeps none, and
// its memifs follow the rule for records of before (Record.origin).
func (o originsFile) apply(allocations map[string]Record) {
	for id, record := range allocations {
		kept, ok := o.Allocations[id]
		if ok && kept.Pod == record.Pod && len(kept.Origins) == len(record.Specs) {
			record.Origins = kept.Origins
			allocations[id] = record
		}
	}
}

// validate refuses an origin this agent does not know.
func (o originsFile) validate() error {
	for id, kept := range o.Allocations {
		for memifID, origin := range kept.Origins {
			switch origin {
			case OriginNamed, OriginDefaultNetwork, OriginWiring:
			default:
				return fmt.Errorf("allocation %s memif %d: unknown origin %q", id, memifID, origin)
			}
		}
	}
	return nil
}

// stateFile is the state's file, in a directory only the agent changes,
// and beside it the origins file, which agents of before never read.
type stateFile struct {
	path string
	// written is what the origins file holds, read at start or last
	// written: a memif's origins never change, so a save that adds no
	// allocation leaves the file as it is (the entries of released
	// allocations it keeps match no record) and costs no second fsync.
	written map[string]allocationOrigins
}

// holds tells whether the origins file already holds every entry of
// origins.
func (f *stateFile) holds(origins originsFile) bool {
	for id, entry := range origins.Allocations {
		if kept, ok := f.written[id]; !ok || kept.Pod != entry.Pod || len(kept.Origins) != len(entry.Origins) {
			return false
		}
	}
	return true
}

// originsName is the origins file's name: networks-origins.json beside
// networks.json.
func (f *stateFile) originsName() string {
	base := filepath.Base(f.path)
	return strings.TrimSuffix(base, filepath.Ext(base)) + "-origins.json"
}

// removeTemps removes the temporary files of both files that a crash
// during a replace left (securedir.Dir.RemoveTemps) and returns their
// paths.
func (f *stateFile) removeTemps() ([]string, error) {
	dir, err := f.openDir()
	if err != nil {
		return nil, fmt.Errorf("networks state %s: %w", f.path, err)
	}
	defer dir.Close()
	return dir.RemoveTemps(filepath.Base(f.path), f.originsName())
}

func (f *stateFile) openDir() (*securedir.Dir, error) {
	return securedir.Open(filepath.Dir(f.path), securedir.Options{Create: true, Mode: 0o700, Group: securedir.NoGroup})
}

// read returns the state with its records' origins; a missing state file
// is an empty state, and a missing origins file keeps no origins.
func (f *stateFile) read() (State, error) {
	dir, err := f.openDir()
	if err != nil {
		return State{}, fmt.Errorf("networks state %s: %w", f.path, err)
	}
	defer dir.Close()
	state, err := f.readState(dir)
	if err != nil {
		return State{}, err
	}
	origins, err := f.readOrigins(dir)
	if err != nil {
		return State{}, err
	}
	origins.apply(state.Allocations)
	f.written = origins.Allocations
	return state, nil
}

func (f *stateFile) readState(dir *securedir.Dir) (State, error) {
	state := State{Version: stateVersion}
	content, err := readContent(dir, filepath.Base(f.path))
	if err == nil && content != nil {
		err = decodeStrict(content, &state)
	}
	if err != nil {
		return State{}, fmt.Errorf("networks state %s: %w", f.path, err)
	}
	if state.Version != stateVersion {
		return State{}, fmt.Errorf("networks state %s: version %d, this agent reads version %d", f.path, state.Version, stateVersion)
	}
	return state, nil
}

// readOrigins returns the origins file's content; a missing file keeps
// no origins.
func (f *stateFile) readOrigins(dir *securedir.Dir) (originsFile, error) {
	var origins originsFile
	content, err := readContent(dir, f.originsName())
	if err == nil && content != nil {
		origins, err = decodeOrigins(content)
	}
	if err != nil {
		return originsFile{}, fmt.Errorf("memif origins %s: %w; move it away to start without them (a memif in no network then follows memifwiring.conf, one in a network keeps it)", dir.Join(f.originsName()), err)
	}
	return origins, nil
}

// decodeOrigins decodes the origins file. One of a later version is a
// later agent's, rolled back from: it keeps no origins, as after a
// rollback to an agent that kept none, rather than stop the node.
func decodeOrigins(content []byte) (originsFile, error) {
	var format struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(content, &format); err != nil {
		return originsFile{}, err
	}
	switch {
	case format.Version > originsVersion:
		return originsFile{}, nil
	case format.Version < originsVersion:
		return originsFile{}, fmt.Errorf("version %d, this agent reads version %d", format.Version, originsVersion)
	}
	var origins originsFile
	if err := decodeStrict(content, &origins); err != nil {
		return originsFile{}, err
	}
	return origins, origins.validate()
}

// readContent returns file name of dir; nil when it does not exist.
func readContent(dir *securedir.Dir, name string) ([]byte, error) {
	file, err := dir.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer file.Close()
	content := bytes.NewBuffer([]byte{})
	if _, err := content.ReadFrom(io.LimitReader(file, maxStateBytes+1)); err != nil {
		return nil, err
	}
	if content.Len() > maxStateBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxStateBytes)
	}
	return content.Bytes(), nil
}

// decodeStrict decodes content into v, refusing fields v does not have.
func decodeStrict(content []byte, v any) error {
	decoder := json.NewDecoder(bytes.NewReader(content))
	decoder.DisallowUnknownFields()
	return decoder.Decode(v)
}

// write replaces the files by state atomically and durably. The origins
// file goes first: a crash before the state file is replaced leaves
// origins for records it does not hold yet, which are never read, and
// none for records released since, which Retain drops at the next start;
// the records both hold never change their origins. The other order
// would leave new records without origins, whose memifs would then be
// taken for records of before: one memifwiring.conf put in its bridge
// domain would stay there after a switch to l2-xconnect.
func (f *stateFile) write(state State) error {
	content, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("networks state %s: %w", f.path, err)
	}
	origins := originsOf(state)
	dir, err := f.openDir()
	if err != nil {
		return fmt.Errorf("networks state %s: %w", f.path, err)
	}
	defer dir.Close()
	if !f.holds(origins) {
		content, err := json.Marshal(origins)
		if err != nil {
			return fmt.Errorf("memif origins: %w", err)
		}
		if err := dir.ReplaceFile(f.originsName(), content, 0o600); err != nil {
			return fmt.Errorf("memif origins %s: %w", dir.Join(f.originsName()), err)
		}
		f.written = origins.Allocations
	}
	if err := dir.ReplaceFile(filepath.Base(f.path), content, 0o600); err != nil {
		return fmt.Errorf("networks state %s: %w", f.path, err)
	}
	return nil
}
