package vppmsg

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Message is one VPP API message without its leading message ID, which the
// connection's message table gives.
type Message interface {
	// MessageName is the name in VPP's definitions, e.g. "memif_create_v2".
	MessageName() string
	// CRC is the definition's CRC as VPP reports it, e.g. "0x8c7de5f7".
	CRC() string
	Marshal(*Encoder)
	Unmarshal(*Decoder)
}

// Request is a message a client sends: it carries the client's index and a
// context echoed in the reply.
type Request interface {
	Message
	SetClientIndex(uint32)
	SetContext(uint32)
}

// Reply is a message VPP sends in answer to a Request.
type Reply interface {
	Message
	GetContext() uint32
}

// RetvalReply is a Reply with a return value (0: success).
type RetvalReply interface {
	Reply
	GetRetval() int32
}

// Encoder appends big-endian fields; the first error sticks.
type Encoder struct {
	buf []byte
	err error
}

// Bytes returns what was encoded and the first error.
func (e *Encoder) Bytes() ([]byte, error) { return e.buf, e.err }

// U8 and the other fixed-size methods append one value.
func (e *Encoder) U8(v uint8)    { e.buf = append(e.buf, v) }
func (e *Encoder) U16(v uint16)  { e.buf = binary.BigEndian.AppendUint16(e.buf, v) }
func (e *Encoder) U32(v uint32)  { e.buf = binary.BigEndian.AppendUint32(e.buf, v) }
func (e *Encoder) U64(v uint64)  { e.buf = binary.BigEndian.AppendUint64(e.buf, v) }
func (e *Encoder) I8(v int8)     { e.U8(uint8(v)) }
func (e *Encoder) I16(v int16)   { e.U16(uint16(v)) }
func (e *Encoder) I32(v int32)   { e.U32(uint32(v)) }
func (e *Encoder) I64(v int64)   { e.U64(uint64(v)) }
func (e *Encoder) F64(v float64) { e.U64(math.Float64bits(v)) }
func (e *Encoder) Bool(v bool) {
	if v {
		e.U8(1)
	} else {
		e.U8(0)
	}
}

// String appends s NUL-padded to size bytes; VPP reads it as a C string,
// so it must leave room for the NUL.
func (e *Encoder) String(s string, size int) {
	if len(s) >= size && e.err == nil {
		e.err = fmt.Errorf("string %q is %d bytes, VPP holds at most %d here", s, len(s), size-1)
	}
	field := make([]byte, size)
	copy(field, s)
	e.buf = append(e.buf, field...)
}

// VarString appends s with its length first.
func (e *Encoder) VarString(s string) {
	e.U32(uint32(len(s)))
	e.buf = append(e.buf, s...)
}

// Decoder reads big-endian fields; reading past the end is an error that
// sticks and yields zero values.
type Decoder struct {
	buf []byte
	err error
}

// NewDecoder reads data.
func NewDecoder(data []byte) *Decoder { return &Decoder{buf: data} }

// Err is the first error.
func (d *Decoder) Err() error { return d.err }

func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return make([]byte, n)
	}
	if n > len(d.buf) || n < 0 {
		d.err = fmt.Errorf("message ends %d bytes early", n-len(d.buf))
		return make([]byte, max(n, 0))
	}
	b := d.buf[:n]
	d.buf = d.buf[n:]
	return b
}

// U8 and the other fixed-size methods read one value.
func (d *Decoder) U8() uint8    { return d.take(1)[0] }
func (d *Decoder) U16() uint16  { return binary.BigEndian.Uint16(d.take(2)) }
func (d *Decoder) U32() uint32  { return binary.BigEndian.Uint32(d.take(4)) }
func (d *Decoder) U64() uint64  { return binary.BigEndian.Uint64(d.take(8)) }
func (d *Decoder) I8() int8     { return int8(d.U8()) }
func (d *Decoder) I16() int16   { return int16(d.U16()) }
func (d *Decoder) I32() int32   { return int32(d.U32()) }
func (d *Decoder) I64() int64   { return int64(d.U64()) }
func (d *Decoder) F64() float64 { return math.Float64frombits(d.U64()) }
func (d *Decoder) Bool() bool   { return d.U8() != 0 }

// String reads a NUL-padded string of size bytes.
func (d *Decoder) String(size int) string {
	b := d.take(size)
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// VarString reads a string with its length first.
func (d *Decoder) VarString() string { return string(d.take(int(d.U32()))) }

// Count checks an array length read from the message against what is left
// of it, so a corrupt count cannot allocate without bound.
func (d *Decoder) Count(n int) int {
	if n > len(d.buf) {
		if d.err == nil {
			d.err = fmt.Errorf("array of %d entries in %d bytes left", n, len(d.buf))
		}
		return 0
	}
	return n
}

// Encode returns m's encoding after its message ID.
func Encode(id uint16, m Message) ([]byte, error) {
	e := &Encoder{}
	e.U16(id)
	m.Marshal(e)
	data, err := e.Bytes()
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", m.MessageName(), err)
	}
	return data, nil
}

// Decode fills m from data, the message after its ID.
func Decode(data []byte, m Message) error {
	d := NewDecoder(data)
	m.Unmarshal(d)
	if err := d.Err(); err != nil {
		return fmt.Errorf("decode %s: %w", m.MessageName(), err)
	}
	return nil
}
