package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Version is the snapshot format version Encode and Writer write.
// "journal" is the generation of the journal that extends the snapshot
// (see Writer); 0 means none. The checksum covers it too.
//
// Version 3 has the layout of version 2 and one more promise: the journal
// it names existed before the snapshot was written, so a missing one was
// lost. A version 2 snapshot (written before its journal) is still read;
// a missing journal of its cannot be told from one a crash kept from
// being made. Version 1 (a snapshot alone) was never released and is
// refused.
const Version = 3

// oldestVersion is the oldest snapshot version Decode reads.
const oldestVersion = 2

// Allocation is one persisted allocation.
type Allocation struct {
	ID              string    `json:"id"`
	DeviceIDs       []string  `json:"deviceIDs"`
	HostDir         string    `json:"hostDir"`
	HostSocket      string    `json:"hostSocket"`
	ContainerSocket string    `json:"containerSocket"`
	Secret          string    `json:"secret"`
	AllocatedAt     time.Time `json:"allocatedAt"`
	PodNamespace    string    `json:"podNamespace,omitempty"`
	PodName         string    `json:"podName,omitempty"`
	PodUID          string    `json:"podUID,omitempty"`
	ContainerName   string    `json:"containerName,omitempty"`
	ClaimUID        string    `json:"claimUID,omitempty"`
	ClaimNamespace  string    `json:"claimNamespace,omitempty"`
	ClaimName       string    `json:"claimName,omitempty"`
	Request         string    `json:"request,omitempty"`
}

// Data is the content of a checkpoint.
type Data struct {
	Allocations []Allocation `json:"allocations"`
}

// file is the on-disk envelope.
type file struct {
	Version  int             `json:"version"`
	Journal  uint64          `json:"journal,omitempty"`
	Data     json.RawMessage `json:"data"`
	Checksum string          `json:"checksum"`
}

// ErrCorrupt is matched (errors.Is) by every *CorruptError.
var ErrCorrupt = errors.New("checkpoint is corrupt")

// CorruptError says why a checkpoint file cannot be used.
type CorruptError struct {
	Path   string
	Reason string
}

// Error implements error.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("checkpoint %s is corrupt: %s", e.Path, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Encode returns the file content for data, in the latest version, with no
// journal.
func Encode(data Data) ([]byte, error) {
	return encodeSnapshot(data, 0)
}

// encodeSnapshot encodes data extended by the journal of generation
// journal (0: none).
func encodeSnapshot(data Data, journal uint64) ([]byte, error) {
	if data.Allocations == nil {
		data.Allocations = []Allocation{}
	}
	payload, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("encode checkpoint data: %w", err)
	}
	envelope := file{Version: Version, Journal: journal, Data: payload, Checksum: checksum(journal, payload)}
	content, err := json.MarshalIndent(envelope, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode checkpoint: %w", err)
	}
	return append(content, '\n'), nil
}

// Decode parses snapshot content without its journal. path only names the file in errors. Any problem is a
// *CorruptError.
func Decode(path string, content []byte) (Data, error) {
	data, _, err := decodeSnapshot(path, content)
	return data, err
}

// snapshotInfo is what a snapshot says of its journal.
type snapshotInfo struct {
	// journal is the generation of the journal extending the snapshot (0:
	// none).
	journal uint64
	// journalMadeFirst is true when that journal existed before the
	// snapshot was written (Version 3).
	journalMadeFirst bool
}

// decodeSnapshot is Decode that also returns what the snapshot says of
// its journal.
func decodeSnapshot(path string, content []byte) (Data, snapshotInfo, error) {
	corrupt := func(format string, args ...any) (Data, snapshotInfo, error) {
		return Data{}, snapshotInfo{}, &CorruptError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	if len(bytes.TrimSpace(content)) == 0 {
		return corrupt("the file is empty")
	}
	var envelope file
	decoder := json.NewDecoder(bytes.NewReader(content))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&envelope); err != nil {
		return corrupt("not a memif-agent checkpoint (truncated or foreign): %v", err)
	}
	if decoder.More() {
		return corrupt("trailing content after the checkpoint")
	}
	if envelope.Version < oldestVersion || envelope.Version > Version {
		return corrupt("version %d is not supported (this agent reads versions %d to %d)", envelope.Version, oldestVersion, Version)
	}
	// The checksum covers the compact form of data, so that re-indenting
	// the file (as an operator's editor may) does not invalidate it.
	var compact bytes.Buffer
	if err := json.Compact(&compact, envelope.Data); err != nil {
		return corrupt("data is not JSON: %v", err)
	}
	if envelope.Checksum != checksum(envelope.Journal, compact.Bytes()) {
		return corrupt("checksum mismatch: the data was changed or partly written")
	}
	var data Data
	if err := json.Unmarshal(envelope.Data, &data); err != nil {
		return corrupt("data does not decode: %v", err)
	}
	if err := data.validate(); err != nil {
		return corrupt("%v", err)
	}
	return data, snapshotInfo{journal: envelope.Journal, journalMadeFirst: envelope.Version >= 3}, nil
}

func (d Data) validate() error {
	seenIDs := map[string]bool{}
	for i, a := range d.Allocations {
		if a.ID == "" {
			return fmt.Errorf("allocation %d has no ID", i)
		}
		if seenIDs[a.ID] {
			return fmt.Errorf("allocation ID %q appears twice", a.ID)
		}
		if err := a.validate(); err != nil {
			return err
		}
		seenIDs[a.ID] = true
	}
	return nil
}

func (a Allocation) validate() error {
	switch {
	case a.ID == "":
		return errors.New("an allocation has no ID")
	case len(a.DeviceIDs) == 0:
		return fmt.Errorf("allocation %q holds no device", a.ID)
	case a.HostDir == "" || a.HostSocket == "":
		return fmt.Errorf("allocation %q has no host directory or socket", a.ID)
	}
	return nil
}

// checksum covers the data and, when there is one, the journal generation.
func checksum(journal uint64, payload []byte) string {
	hash := sha256.New()
	if journal != 0 {
		fmt.Fprintf(hash, "journal %d\n", journal)
	}
	hash.Write(payload)
	return "sha256:" + hex.EncodeToString(hash.Sum(nil))
}
