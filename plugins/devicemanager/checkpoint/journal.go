package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"slices"
)

// The journal, "<checkpoint>.journal", extends a snapshot with the changes
// made since it was written, one record per change, so that persisting an
// allocation appends a few hundred bytes and syncs one file instead of
// rewriting and renaming the whole checkpoint.
//
// Layout (integers big-endian):
//
//	header: "MEMIFJ01" | generation uint64 | CRC-32C of the previous 16 bytes
//	record: length uint32 | CRC-32C of the payload uint32 | payload (JSON journalRecord)
//
// The snapshot names the generation of its journal; a journal of another
// generation is stale (a compaction stopped between writing the snapshot
// and the new journal) and is ignored: the snapshot already holds it.
// Records are appended and synced one batch at a time, so only the last
// record (one Save) can be torn by a crash: one that runs past the end of the file, or
// ends at the end with a wrong CRC, is dropped (its Save never returned). A
// record with a wrong CRC followed by more data is corruption.
const (
	journalMagic      = "MEMIFJ01"
	journalHeaderSize = len(journalMagic) + 8 + 4
	recordHeaderSize  = 4 + 4
	// maxRecordSize bounds one record; an allocation is a few hundred
	// bytes even with many devices.
	maxRecordSize = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// journalRecord is what one Save changed, so that a Save is all in the
// journal or not at all: allocations added or replaced, and IDs removed.
type journalRecord struct {
	Put    []Allocation `json:"put,omitempty"`
	Delete []string     `json:"delete,omitempty"`
}

func journalPath(checkpointPath string) string { return checkpointPath + ".journal" }

func encodeJournalHeader(generation uint64) []byte {
	header := make([]byte, 0, journalHeaderSize)
	header = append(header, journalMagic...)
	header = binary.BigEndian.AppendUint64(header, generation)
	return binary.BigEndian.AppendUint32(header, crc32.Checksum(header, castagnoli))
}

// appendRecord appends the encoding of r to buf.
func appendRecord(buf []byte, r journalRecord) ([]byte, error) {
	payload, err := json.Marshal(r)
	if err != nil {
		return buf, fmt.Errorf("encode checkpoint journal record: %w", err)
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(payload)))
	buf = binary.BigEndian.AppendUint32(buf, crc32.Checksum(payload, castagnoli))
	return append(buf, payload...), nil
}

// decodeJournal returns the records of content when it is the journal of
// generation, and none when it is a stale one; torn is the offset of a torn
// last record it dropped, 0 if none. path only names the file in errors;
// every problem is a *CorruptError.
func decodeJournal(path string, content []byte, generation uint64) (records []journalRecord, torn int, err error) {
	corrupt := func(format string, args ...any) ([]journalRecord, int, error) {
		return nil, 0, &CorruptError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	if len(content) < journalHeaderSize || !bytes.HasPrefix(content, []byte(journalMagic)) {
		return corrupt("not a memif-agent checkpoint journal (short or foreign header)")
	}
	header := content[:journalHeaderSize]
	if crc32.Checksum(header[:journalHeaderSize-4], castagnoli) != binary.BigEndian.Uint32(header[journalHeaderSize-4:]) {
		return corrupt("journal header checksum mismatch")
	}
	if binary.BigEndian.Uint64(header[len(journalMagic):]) != generation {
		return nil, 0, nil
	}
	for rest, offset := content[journalHeaderSize:], journalHeaderSize; len(rest) > 0; {
		if len(rest) < recordHeaderSize {
			return records, offset, nil // torn header of the last record
		}
		size := binary.BigEndian.Uint32(rest)
		if uint64(size) > uint64(len(rest)-recordHeaderSize) {
			return records, offset, nil // torn last record
		}
		end := recordHeaderSize + int(size)
		payload := rest[recordHeaderSize:end]
		if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(rest[4:]) {
			if end == len(rest) {
				return records, offset, nil // torn last record
			}
			return corrupt("journal record at byte %d: checksum mismatch", offset)
		}
		if size > maxRecordSize {
			return corrupt("journal record at byte %d: %d bytes, more than the %d allowed", offset, size, maxRecordSize)
		}
		r, err := decodeRecord(payload)
		if err != nil {
			return corrupt("journal record at byte %d: %v", offset, err)
		}
		records = append(records, r)
		rest, offset = rest[end:], offset+end
	}
	return records, 0, nil
}

func decodeRecord(payload []byte) (journalRecord, error) {
	var r journalRecord
	decoder := json.NewDecoder(bytes.NewReader(payload))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&r); err != nil {
		return r, fmt.Errorf("does not decode: %w", err)
	}
	if decoder.More() {
		return r, fmt.Errorf("trailing content")
	}
	if len(r.Put) == 0 && len(r.Delete) == 0 {
		return r, fmt.Errorf("holds no change")
	}
	return r, nil
}

// apply returns d changed by records, in order: a put replaces the
// allocation of its ID in place or appends it; a delete removes one that
// must exist.
func (d Data) apply(records []journalRecord) (Data, error) {
	allocations := slices.Clone(d.Allocations)
	for i, r := range records {
		for _, put := range r.Put {
			at := slices.IndexFunc(allocations, func(a Allocation) bool { return a.ID == put.ID })
			if at < 0 {
				allocations = append(allocations, put)
			} else {
				allocations[at] = put
			}
		}
		for _, id := range r.Delete {
			at := slices.IndexFunc(allocations, func(a Allocation) bool { return a.ID == id })
			if at < 0 {
				return Data{}, fmt.Errorf("journal record %d deletes allocation %q, which does not exist", i+1, id)
			}
			allocations = slices.Delete(allocations, at, at+1)
		}
	}
	out := Data{Allocations: allocations}
	if err := out.validate(); err != nil {
		return Data{}, err
	}
	return out, nil
}
