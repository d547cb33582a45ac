// Command vppapigen generates the Go messages of package vppmsg from VPP's
// own API definitions (the .api.json files VPP's build writes next to its
// .api files): one struct per message with its name, CRC, and big-endian
// encoding in field order, and the types, enums and aliases the messages
// use. Only the messages named on the command line are generated, with
// the constant VPPRelease: the VPP build the definitions come from, which
// the client names when a VPP's CRCs differ.
//
//	go run ./scripts/vppapigen -api internal/vppapi/vppmsg/apijson -vpp-release v26.10-rc0-374-gb575ec2c56d -out internal/vppapi/vppmsg/messages.gen.go msg...
//
// scripts/generate.sh runs it with the messages the agent uses.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	apiDir := flag.String("api", "", "directory of the .api.json files")
	release := flag.String("vpp-release", "", "the VPP build the .api.json files come from, such as v26.10-rc0-374-gb575ec2c56d")
	out := flag.String("out", "", "Go file to write")
	flag.Parse()
	if *apiDir == "" || *release == "" || *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: vppapigen -api DIR -vpp-release VERSION -out FILE message...")
		os.Exit(2)
	}
	code, err := generate(*apiDir, *release, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "vppapigen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, code, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "vppapigen:", err)
		os.Exit(1)
	}
}

// field is one field of a message or type: [type, name], [type, name,
// length] or [type, name, 0, count field], optionally followed by an
// options object.
type field struct {
	typ, name  string
	length     int
	countField string
}

// definition is a message, a type or a union.
type definition struct {
	name   string
	fields []field
	crc    string
	module string
	// memclntIndex is the message's position among memclnt's messages.
	memclntIndex int
}

type enum struct {
	name, base string
	values     [][2]any
}

type alias struct {
	Type   string `json:"type"`
	Length int    `json:"length"`
}

// api is what the .api.json files define, by name.
type api struct {
	messages map[string]*definition
	types    map[string]*definition
	unions   map[string]*definition
	enums    map[string]*enum
	aliases  map[string]alias
}

type apiFile struct {
	Module    string                     `json:"module"`
	Messages  []json.RawMessage          `json:"messages"`
	Types     []json.RawMessage          `json:"types"`
	Unions    []json.RawMessage          `json:"unions"`
	Enums     []json.RawMessage          `json:"enums"`
	EnumFlags []json.RawMessage          `json:"enumflags"`
	Aliases   map[string]alias           `json:"aliases"`
	Options   map[string]json.RawMessage `json:"options"`
}

func load(dir string) (*api, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.api.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no .api.json files in %s", dir)
	}
	a := &api{messages: map[string]*definition{}, types: map[string]*definition{}, unions: map[string]*definition{},
		enums: map[string]*enum{}, aliases: map[string]alias{}}
	for _, path := range files {
		if err := a.loadFile(path); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return a, nil
}

func (a *api) loadFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var file apiFile
	if err := json.Unmarshal(data, &file); err != nil {
		return err
	}
	for i, raw := range file.Messages {
		def, err := parseDefinition(raw)
		if err != nil {
			return err
		}
		def.module, def.memclntIndex = file.Module, i
		a.messages[def.name] = def
	}
	for _, list := range []struct {
		raw []json.RawMessage
		to  map[string]*definition
	}{{file.Types, a.types}, {file.Unions, a.unions}} {
		for _, raw := range list.raw {
			def, err := parseDefinition(raw)
			if err != nil {
				return err
			}
			list.to[def.name] = def
		}
	}
	for _, raw := range slices.Concat(file.Enums, file.EnumFlags) {
		e, err := parseEnum(raw)
		if err != nil {
			return err
		}
		a.enums[e.name] = e
	}
	for name, al := range file.Aliases {
		a.aliases[name] = al
	}
	return nil
}

func parseDefinition(raw json.RawMessage) (*definition, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 {
		return nil, fmt.Errorf("definition %s: want a list", raw)
	}
	def := &definition{}
	if err := json.Unmarshal(items[0], &def.name); err != nil {
		return nil, fmt.Errorf("definition %s: want its name first", raw)
	}
	for _, item := range items[1:] {
		var meta struct {
			CRC string `json:"crc"`
		}
		if json.Unmarshal(item, &meta) == nil {
			def.crc = meta.CRC
			continue
		}
		var parts []any
		if err := json.Unmarshal(item, &parts); err != nil || len(parts) < 2 {
			return nil, fmt.Errorf("definition %s: field %s", def.name, item)
		}
		f := field{typ: parts[0].(string), name: parts[1].(string)}
		if len(parts) > 2 {
			if n, ok := parts[2].(float64); ok {
				f.length = int(n)
			}
		}
		if len(parts) > 3 {
			if count, ok := parts[3].(string); ok {
				f.countField = count
			}
		}
		def.fields = append(def.fields, f)
	}
	return def, nil
}

func parseEnum(raw json.RawMessage) (*enum, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 {
		return nil, fmt.Errorf("enum %s: want a list", raw)
	}
	e := &enum{}
	if err := json.Unmarshal(items[0], &e.name); err != nil {
		return nil, fmt.Errorf("enum %s: want its name first", raw)
	}
	for _, item := range items[1:] {
		var meta struct {
			EnumType string `json:"enumtype"`
		}
		if json.Unmarshal(item, &meta) == nil {
			e.base = meta.EnumType
			continue
		}
		var value [2]any
		if err := json.Unmarshal(item, &value); err != nil {
			return nil, fmt.Errorf("enum %s: value %s", e.name, item)
		}
		e.values = append(e.values, value)
	}
	return e, nil
}

// baseTypes maps VPP's scalar types to Go types and codec method suffixes.
var baseTypes = map[string][2]string{
	"u8": {"uint8", "U8"}, "u16": {"uint16", "U16"}, "u32": {"uint32", "U32"}, "u64": {"uint64", "U64"},
	"i8": {"int8", "I8"}, "i16": {"int16", "I16"}, "i32": {"int32", "I32"}, "i64": {"int64", "I64"},
	"f64": {"float64", "F64"}, "bool": {"bool", "Bool"},
}

// initialisms keep Go's spelling of common abbreviations.
var initialisms = map[string]string{"id": "ID", "api": "API", "mtu": "MTU", "ip": "IP", "ip4": "IP4", "ip6": "IP6", "ipv6": "IPv6", "mac": "MAC", "crc": "CRC"}

// camel turns a VPP name (snake case, maybe vl_api_..._t) into a Go name.
func camel(name string) string {
	name = strings.TrimSuffix(strings.TrimPrefix(name, "vl_api_"), "_t")
	var b strings.Builder
	for _, part := range strings.Split(name, "_") {
		if part == "" {
			continue
		}
		if initialism, ok := initialisms[part]; ok {
			b.WriteString(initialism)
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

type generator struct {
	api     *api
	out     bytes.Buffer
	emitted map[string]bool
	// pending are named types still to be written.
	pending []string
}

func generate(dir, release string, messages []string) ([]byte, error) {
	a, err := load(dir)
	if err != nil {
		return nil, err
	}
	g := &generator{api: a, emitted: map[string]bool{}}
	g.printf("// Code generated by scripts/vppapigen from VPP's .api.json files; DO NOT EDIT.\n\npackage vppmsg\n\n")
	g.printf("// VPPRelease is the VPP build whose .api.json files the messages were\n// generated from.\nconst VPPRelease = %q\n\n", release)
	slices.Sort(messages)
	g.printf("// Messages are the generated messages, by name.\nvar Messages = map[string]func() Message{\n")
	for _, name := range messages {
		if a.messages[name] == nil {
			return nil, fmt.Errorf("no message %q in %s", name, dir)
		}
		g.printf("%q: func() Message { return new(%s) },\n", name, camel(name))
	}
	g.printf("}\n\n")
	for _, name := range messages {
		if err := g.message(a.messages[name]); err != nil {
			return nil, err
		}
	}
	for len(g.pending) > 0 {
		name := g.pending[0]
		g.pending = g.pending[1:]
		if err := g.namedType(name); err != nil {
			return nil, err
		}
	}
	code, err := format.Source(g.out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format generated code: %w\n%s", err, g.out.Bytes())
	}
	return code, nil
}

func (g *generator) printf(format string, args ...any) { fmt.Fprintf(&g.out, format, args...) }

// goType returns the Go type of a VPP type name, queueing named types.
func (g *generator) goType(typ string) (string, error) {
	if base, ok := baseTypes[typ]; ok {
		return base[0], nil
	}
	if typ == "string" {
		return "string", nil
	}
	short := strings.TrimSuffix(strings.TrimPrefix(typ, "vl_api_"), "_t")
	_, isAlias := g.api.aliases[short]
	if isAlias || g.api.enums[short] != nil || g.api.types[short] != nil || g.api.unions[short] != nil {
		if !g.emitted[short] {
			g.emitted[short] = true
			g.pending = append(g.pending, short)
		}
		return camel(short), nil
	}
	return "", fmt.Errorf("unknown type %q", typ)
}

func (g *generator) message(def *definition) error {
	goName := camel(def.name)
	g.printf("// %s is VPP's %s (module %s).\ntype %s struct {\n", goName, def.name, def.module, goName)
	fields := def.fields
	if len(fields) > 0 && fields[0].name == "_vl_msg_id" {
		fields = fields[1:]
	}
	if err := g.structFields(fields); err != nil {
		return fmt.Errorf("message %s: %w", def.name, err)
	}
	g.printf("}\n\n")
	g.printf("// MessageName implements Message.\nfunc (*%s) MessageName() string { return %q }\n\n", goName, def.name)
	g.printf("// CRC implements Message.\nfunc (*%s) CRC() string { return %q }\n\n", goName, def.crc)
	for _, f := range fields {
		switch f.name {
		case "client_index":
			g.printf("// SetClientIndex implements Request.\nfunc (m *%s) SetClientIndex(index uint32) { m.ClientIndex = index }\n\n", goName)
		case "context":
			g.printf("// SetContext implements Message.\nfunc (m *%s) SetContext(context uint32) { m.Context = context }\n\n", goName)
			g.printf("// GetContext implements Message.\nfunc (m *%s) GetContext() uint32 { return m.Context }\n\n", goName)
		case "retval":
			g.printf("// GetRetval implements Reply.\nfunc (m *%s) GetRetval() int32 { return m.Retval }\n\n", goName)
		}
	}
	if def.module == "memclnt" {
		g.printf("// %sMemclntIndex is the message's position in memclnt.api.json.\nconst %sMemclntIndex = %d\n\n", goName, goName, def.memclntIndex)
	}
	return g.codec(goName, fields)
}

func (g *generator) structFields(fields []field) error {
	for _, f := range fields {
		typ, err := g.goType(f.typ)
		if err != nil {
			return fmt.Errorf("field %s: %w", f.name, err)
		}
		switch {
		case f.typ == "string":
		case f.countField != "":
			typ = "[]" + typ
		case f.length > 0:
			typ = fmt.Sprintf("[%d]%s", f.length, typ)
		}
		g.printf("%s %s\n", camel(f.name), typ)
	}
	return nil
}

// codec writes the Marshal and Unmarshal methods of a struct.
func (g *generator) codec(goName string, fields []field) error {
	var enc, dec bytes.Buffer
	for _, f := range fields {
		e, d, err := g.fieldCodec("m."+camel(f.name), f)
		if err != nil {
			return fmt.Errorf("%s field %s: %w", goName, f.name, err)
		}
		enc.WriteString(e)
		dec.WriteString(d)
	}
	g.printf("// Marshal implements Message.\nfunc (m *%s) Marshal(b *Encoder) {\n%s}\n\n", goName, enc.String())
	g.printf("// Unmarshal implements Message.\nfunc (m *%s) Unmarshal(b *Decoder) {\n%s}\n\n", goName, dec.String())
	return nil
}

func (g *generator) fieldCodec(expr string, f field) (string, string, error) {
	if f.typ == "string" {
		if f.length == 0 {
			return fmt.Sprintf("b.VarString(%s)\n", expr), fmt.Sprintf("%s = b.VarString()\n", expr), nil
		}
		return fmt.Sprintf("b.String(%s, %d)\n", expr, f.length), fmt.Sprintf("%s = b.String(%d)\n", expr, f.length), nil
	}
	goType, err := g.goType(f.typ)
	if err != nil {
		return "", "", err
	}
	one := func(item string) (string, string) { return g.scalarCodec(item, f.typ, goType) }
	switch {
	case f.countField != "":
		e, d := one(expr + "[i]")
		count := "m." + camel(f.countField)
		return fmt.Sprintf("for i := range %s {\n%s}\n", expr, e),
			fmt.Sprintf("%s = make([]%s, b.Count(int(%s)))\nfor i := range %s {\n%s}\n", expr, goType, count, expr, d), nil
	case f.length > 0:
		e, d := one(expr + "[i]")
		return fmt.Sprintf("for i := range %s {\n%s}\n", expr, e), fmt.Sprintf("for i := range %s {\n%s}\n", expr, d), nil
	}
	e, d := one(expr)
	return e, d, nil
}

// scalarCodec encodes one value: a base type, an enum or alias of one, or a
// struct or union with its own methods.
func (g *generator) scalarCodec(expr, typ, goType string) (string, string) {
	if base, ok := baseTypes[typ]; ok {
		return fmt.Sprintf("b.%s(%s)\n", base[1], expr), fmt.Sprintf("%s = b.%s()\n", expr, base[1])
	}
	short := strings.TrimSuffix(strings.TrimPrefix(typ, "vl_api_"), "_t")
	if e := g.api.enums[short]; e != nil {
		base := baseTypes[e.base]
		return fmt.Sprintf("b.%s(%s(%s))\n", base[1], base[0], expr), fmt.Sprintf("%s = %s(b.%s())\n", expr, goType, base[1])
	}
	if al, ok := g.api.aliases[short]; ok {
		if base, ok := baseTypes[al.Type]; ok {
			if al.Length > 0 {
				return fmt.Sprintf("for i := range %s {\nb.%s(%s[i])\n}\n", expr, base[1], expr),
					fmt.Sprintf("for i := range %s {\n%s[i] = b.%s()\n}\n", expr, expr, base[1])
			}
			return fmt.Sprintf("b.%s(%s(%s))\n", base[1], base[0], expr), fmt.Sprintf("%s = %s(b.%s())\n", expr, goType, base[1])
		}
	}
	return fmt.Sprintf("%s.Marshal(b)\n", expr), fmt.Sprintf("%s.Unmarshal(b)\n", expr)
}

func (g *generator) namedType(name string) error {
	goName := camel(name)
	if e := g.api.enums[name]; e != nil {
		base, ok := baseTypes[e.base]
		if !ok {
			return fmt.Errorf("enum %s: unknown base type %q", name, e.base)
		}
		g.printf("// %s is VPP's enum %s.\ntype %s %s\n\nconst (\n", goName, name, goName, base[0])
		for _, v := range e.values {
			g.printf("%s %s = %v\n", camel(strings.ToLower(v[0].(string))), goName, v[1])
		}
		g.printf(")\n\n")
		return nil
	}
	if al, ok := g.api.aliases[name]; ok {
		typ, err := g.goType(al.Type)
		if err != nil {
			return fmt.Errorf("alias %s: %w", name, err)
		}
		if al.Length > 0 {
			typ = fmt.Sprintf("[%d]%s", al.Length, typ)
		}
		if _, isBase := baseTypes[al.Type]; !isBase {
			if al.Length > 0 {
				return fmt.Errorf("alias %s: an array of type %s is not supported", name, al.Type)
			}
			// An alias of a type is that type, with its codec.
			g.printf("// %s is VPP's %s.\ntype %s = %s\n\n", goName, name, goName, typ)
			return nil
		}
		g.printf("// %s is VPP's %s.\ntype %s %s\n\n", goName, name, goName, typ)
		return nil
	}
	if def := g.api.types[name]; def != nil {
		g.printf("// %s is VPP's type %s.\ntype %s struct {\n", goName, name, goName)
		if err := g.structFields(def.fields); err != nil {
			return fmt.Errorf("type %s: %w", name, err)
		}
		g.printf("}\n\n")
		return g.codec(goName, def.fields)
	}
	if def := g.api.unions[name]; def != nil {
		return g.union(goName, def)
	}
	return fmt.Errorf("type %s: not defined", name)
}

// union writes a union as the bytes of its largest member, VPP's layout;
// a member is read or written by the caller with its own encoding.
func (g *generator) union(goName string, def *definition) error {
	size := 0
	for _, f := range def.fields {
		n, err := g.sizeOf(f.typ)
		if err != nil {
			return fmt.Errorf("union %s member %s: %w", def.name, f.name, err)
		}
		size = max(size, n)
	}
	g.printf("// %s is VPP's union %s: the bytes of its largest member.\ntype %s [%d]uint8\n\n", goName, def.name, goName, size)
	g.printf("// Marshal writes the union's bytes.\nfunc (m *%s) Marshal(b *Encoder) {\nfor i := range m {\nb.U8(m[i])\n}\n}\n\n", goName)
	g.printf("// Unmarshal reads the union's bytes.\nfunc (m *%s) Unmarshal(b *Decoder) {\nfor i := range m {\nm[i] = b.U8()\n}\n}\n\n", goName)
	return nil
}

// baseSizes are the encoded sizes of VPP's scalar types.
var baseSizes = map[string]int{"u8": 1, "i8": 1, "bool": 1, "u16": 2, "i16": 2, "u32": 4, "i32": 4, "u64": 8, "i64": 8, "f64": 8}

// sizeOf is the encoded size of a scalar type or an alias of a fixed array
// of one, which is all VPP's unions hold.
func (g *generator) sizeOf(typ string) (int, error) {
	if n, ok := baseSizes[typ]; ok {
		return n, nil
	}
	short := strings.TrimSuffix(strings.TrimPrefix(typ, "vl_api_"), "_t")
	if al, ok := g.api.aliases[short]; ok {
		n, err := g.sizeOf(al.Type)
		return n * max(al.Length, 1), err
	}
	return 0, fmt.Errorf("size of %s is not known", typ)
}
