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
// generation (any generation when generation is 0: the snapshot naming it
// is lost), and none when it is a stale one. A record that does not check
// out is skipped up to the next one that does, each skipped stretch a
// *CorruptError in skipped; a bad record with none after it is a torn
// tail, whose offset is torn (0: none). err, a *CorruptError, is for a
// journal whose header is unusable: none of it can be trusted. path only
// names the file in errors.
func decodeJournal(path string, content []byte, generation uint64) (records []journalRecord, torn int, skipped []error, err error) {
	corrupt := func(format string, args ...any) *CorruptError {
		return &CorruptError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	if len(content) < journalHeaderSize || !bytes.HasPrefix(content, []byte(journalMagic)) {
		return nil, 0, nil, corrupt("not a memif-agent checkpoint journal (short or foreign header)")
	}
	header := content[:journalHeaderSize]
	if crc32.Checksum(header[:journalHeaderSize-4], castagnoli) != binary.BigEndian.Uint32(header[journalHeaderSize-4:]) {
		return nil, 0, nil, corrupt("journal header checksum mismatch")
	}
	if generation != 0 && binary.BigEndian.Uint64(header[len(journalMagic):]) != generation {
		return nil, 0, nil, nil
	}
	for offset := journalHeaderSize; offset < len(content); {
		r, end, problem := recordAt(content, offset)
		if problem == "" {
			records = append(records, r)
			offset = end
			continue
		}
		next := nextRecord(content, offset+1)
		if next < 0 {
			return records, offset, skipped, nil // torn last record
		}
		skipped = append(skipped, corrupt("journal bytes %d to %d skipped: the record at byte %d %s", offset, next, offset, problem))
		offset = next
	}
	return records, 0, skipped, nil
}

// recordTooLong is formatted once: a skip over corruption meets it at
// most of the bytes it tries.
var recordTooLong = fmt.Sprintf("claims more than the %d bytes a record may hold", maxRecordSize)

// recordAt decodes the record at offset of content; problem says why it
// does not check out, "" when it does.
func recordAt(content []byte, offset int) (r journalRecord, end int, problem string) {
	rest := content[offset:]
	if len(rest) < recordHeaderSize {
		return r, 0, "is cut short in its header"
	}
	size := binary.BigEndian.Uint32(rest)
	switch {
	case size > maxRecordSize:
		return r, 0, recordTooLong
	case uint64(size) > uint64(len(rest)-recordHeaderSize):
		return r, 0, "runs past the end of the file"
	}
	payload := rest[recordHeaderSize : recordHeaderSize+int(size)]
	// Every payload is a JSON object. Checking its ends before summing it
	// keeps a skip over a corrupt stretch linear: each of its bytes can
	// claim up to maxRecordSize bytes after it.
	if size < 2 || payload[0] != '{' || payload[size-1] != '}' {
		return r, 0, "is not a JSON object"
	}
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(rest[4:]) {
		return r, 0, "has a checksum mismatch"
	}
	r, err := decodeRecord(payload)
	if err != nil {
		return r, 0, err.Error()
	}
	return r, offset + recordHeaderSize + int(size), ""
}

// nextRecord is the offset of the first record from offset on that checks
// out, -1 if none.
func nextRecord(content []byte, offset int) int {
	for ; offset+recordHeaderSize <= len(content); offset++ {
		if _, _, problem := recordAt(content, offset); problem == "" {
			return offset
		}
	}
	return -1
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
// allocation of its ID in place or appends it; a delete removes it. A put
// that is not a usable allocation, or a delete of one that does not exist
// (its put was in a record lost to damage), is skipped and said in
// skipped.
func (d Data) apply(records []journalRecord) (out Data, skipped []error) {
	allocations := slices.Clone(d.Allocations)
	for i, r := range records {
		for _, put := range r.Put {
			if err := put.validate(); err != nil {
				skipped = append(skipped, fmt.Errorf("journal record %d: %w; skipped", i+1, err))
				continue
			}
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
				skipped = append(skipped, fmt.Errorf("journal record %d deletes allocation %q, which does not exist; skipped", i+1, id))
				continue
			}
			allocations = slices.Delete(allocations, at, at+1)
		}
	}
	return Data{Allocations: allocations}, skipped
}
