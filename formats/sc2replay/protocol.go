// This file reads a protocol table: the Python source of Blizzard's
// s2protocol versions/protocolNNNNN.py, as s2prot ships it in build.Builds.
// We parse the tables ourselves (typeinfos, event types, type ids) because
// our decoders (decoder.go) need the type tree to bound every length against
// the bytes left before allocating, which s2prot's decoders do not do.

package sc2replay

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/icza/s2prot"
	"github.com/icza/s2prot/build"
)

// kind is the decoding rule of a type (the typeinfos method name).
type kind uint8

const (
	kInt kind = iota
	kStruct
	kChoice
	kArray
	kBitArray
	kBlob
	kOptional
	kBool
	kFourCC
	kNull
)

var kindNames = map[string]kind{
	"_int": kInt, "_struct": kStruct, "_choice": kChoice, "_array": kArray, "_bitarray": kBitArray,
	"_blob": kBlob, "_optional": kOptional, "_bool": kBool, "_fourcc": kFourCC, "_null": kNull,
}

// typeInfo is one entry of typeinfos. For ints, arrays, bit arrays, blobs
// and choices, offset and bits are the bit-packed bounds (value = offset +
// bits read); elem is the element type of arrays and optionals.
type typeInfo struct {
	kind   kind
	offset int64
	bits   uint8
	elem   int
	fields []field
}

// field is a struct field or a choice alternative. Names lose their "m_"
// prefix as in s2prot, so decoded values read the same as s2prot's.
type field struct {
	name   string
	typeid int
	tag    int64
	parent bool // "__parent": its struct's fields are merged into ours
}

// evType is an event id's data type and s2prot-style name.
type evType struct {
	typeid int
	et     *s2prot.EvtType
}

// protocol is one parsed protocol table.
type protocol struct {
	build   int
	types   []typeInfo
	game    map[int64]evType
	message map[int64]evType
	tracker map[int64]evType // nil before tracker events existed (24944)
	minBits []int            // per type, the fewest bits a bit-packed value takes

	gameEventID, messageEventID, trackerEventID   int
	svarUint32, userID, header, details, initData int
}

// protoCache holds parsed tables by the build of their source; a failed
// parse is cached as nil. Tables are immutable once parsed.
var protoCache = struct {
	sync.Mutex
	m map[int]*protocol
}{m: map[int]*protocol{}}

// protocolFor returns the parsed table for base build b, or nil when no
// table lists it (or its table does not parse, which a test rules out).
func protocolFor(b int) *protocol {
	src, ok := sourceBuild(b)
	if !ok {
		return nil
	}
	protoCache.Lock()
	defer protoCache.Unlock()
	if p, ok := protoCache.m[src]; ok {
		return p
	}
	p, err := parseProtocol(src, build.Builds[src])
	if err != nil {
		p = nil
	}
	protoCache.m[src] = p
	return p
}

// headerProtocol returns the newest table s2prot ships, which decodes the
// replay header of every build (SHeader has only grown fields since 1.0).
func headerProtocol() *protocol {
	newest := 0
	for b := range build.Builds {
		newest = max(newest, b)
	}
	return protocolFor(newest)
}

// parseProtocol parses the Python source of one protocol table.
func parseProtocol(b int, src string) (*protocol, error) {
	p := &protocol{build: b}
	ints := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(src))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	section := ""
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#':
			continue
		case line == "]" || line == "}":
			section = ""
			continue
		case strings.HasSuffix(line, "= [") || strings.HasSuffix(line, "= {"):
			section = strings.TrimSpace(line[:len(line)-3])
			switch section {
			case "game_event_types":
				p.game = map[int64]evType{}
			case "message_event_types":
				p.message = map[int64]evType{}
			case "tracker_event_types":
				p.tracker = map[int64]evType{}
			}
			continue
		}
		var err error
		switch section {
		case "typeinfos":
			err = p.addType(line)
		case "game_event_types":
			err = addEvent(p.game, line, "NNet.Game.S", "Event")
		case "message_event_types":
			err = addEvent(p.message, line, "NNet.Game.S", "Message")
		case "tracker_event_types":
			err = addEvent(p.tracker, line, "NNet.Replay.Tracker.S", "Event")
		case "":
			if name, val, ok := strings.Cut(line, "="); ok && strings.HasSuffix(strings.TrimSpace(name), "_typeid") {
				if n, err := strconv.Atoi(strings.TrimSpace(val)); err == nil {
					ints[strings.TrimSpace(name)] = n
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("protocol %d: %q: %w", b, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("protocol %d: %w", b, err)
	}
	return p, p.resolve(ints)
}

// resolve fills the type ids of the table's roots and checks every type id
// the table mentions, so decoding never indexes out of range.
func (p *protocol) resolve(ints map[string]int) error {
	get := func(name string) (int, error) {
		n, ok := ints[name]
		if !ok || n < 0 || n >= len(p.types) {
			return 0, fmt.Errorf("protocol %d: %s missing or out of range", p.build, name)
		}
		return n, nil
	}
	userName := "replay_userid_typeid"
	if _, ok := ints[userName]; !ok {
		userName = "replay_playerid_typeid" // before 24764
	}
	for _, r := range []struct {
		dst  *int
		name string
	}{
		{&p.gameEventID, "game_eventid_typeid"}, {&p.messageEventID, "message_eventid_typeid"},
		{&p.svarUint32, "svaruint32_typeid"}, {&p.userID, userName}, {&p.header, "replay_header_typeid"},
		{&p.details, "game_details_typeid"}, {&p.initData, "replay_initdata_typeid"},
	} {
		n, err := get(r.name)
		if err != nil {
			return err
		}
		*r.dst = n
	}
	if p.tracker != nil {
		n, err := get("tracker_eventid_typeid")
		if err != nil {
			return err
		}
		p.trackerEventID = n
	}
	if p.game == nil || p.message == nil {
		return fmt.Errorf("protocol %d: event tables missing", p.build)
	}
	ok := func(id int) bool { return id >= 0 && id < len(p.types) }
	for i, t := range p.types {
		if (t.kind == kArray || t.kind == kOptional) && !ok(t.elem) {
			return fmt.Errorf("protocol %d: type %d: element type %d out of range", p.build, i, t.elem)
		}
		for _, f := range t.fields {
			if !ok(f.typeid) {
				return fmt.Errorf("protocol %d: type %d: field %s type %d out of range", p.build, i, f.name, f.typeid)
			}
		}
	}
	p.minBits = make([]int, len(p.types))
	for i := range p.types {
		p.minBits[i] = p.minBitsOf(i, 0)
	}
	for _, m := range []map[int64]evType{p.game, p.message, p.tracker} {
		for id, e := range m {
			if !ok(e.typeid) {
				return fmt.Errorf("protocol %d: event %d type %d out of range", p.build, id, e.typeid)
			}
		}
	}
	return nil
}

// addType parses one typeinfos line, e.g. ('_int',[(0,7)]),  #0.
func (p *protocol) addType(line string) error {
	if i := strings.LastIndex(line, "#"); i >= 0 {
		line = line[:i]
	}
	v, err := parsePy(strings.TrimSuffix(strings.TrimSpace(line), ","))
	if err != nil {
		return err
	}
	tup, ok := v.([]any)
	if !ok || len(tup) != 2 {
		return fmt.Errorf("expected (method, args)")
	}
	name, _ := tup[0].(string)
	args, _ := tup[1].([]any)
	k, ok := kindNames[name]
	if !ok {
		return fmt.Errorf("unknown method %q", name)
	}
	t := typeInfo{kind: k}
	switch k {
	case kInt, kBitArray, kBlob:
		err = t.setBounds(args, 1)
	case kArray:
		if err = t.setBounds(args, 2); err == nil {
			t.elem, err = pyInt(args[1])
		}
	case kOptional:
		if len(args) != 1 {
			return fmt.Errorf("expected [typeid]")
		}
		t.elem, err = pyInt(args[0])
	case kStruct:
		if len(args) != 1 {
			return fmt.Errorf("expected [[fields]]")
		}
		fs, _ := args[0].([]any)
		for _, f := range fs {
			ft, _ := f.([]any)
			if len(ft) != 3 {
				return fmt.Errorf("expected (name, typeid, tag)")
			}
			var fd field
			fd.name, _ = ft[0].(string)
			if fd.typeid, err = pyInt(ft[1]); err != nil {
				return err
			}
			tag, ok := ft[2].(int64)
			if !ok {
				return fmt.Errorf("expected an integer field tag")
			}
			fd.tag = tag
			fd.parent = fd.name == "__parent"
			fd.name = strings.TrimPrefix(fd.name, "m_")
			t.fields = append(t.fields, fd)
		}
	case kChoice:
		if err = t.setBounds(args, 2); err != nil {
			return err
		}
		d, ok := args[1].(pyDict)
		if !ok {
			return fmt.Errorf("expected {tag: (name, typeid)}")
		}
		for _, kv := range d {
			tag, ok := kv.k.(int64)
			ft, _ := kv.v.([]any)
			if !ok || len(ft) != 2 {
				return fmt.Errorf("expected tag: (name, typeid)")
			}
			fd := field{tag: tag}
			fd.name, _ = ft[0].(string)
			if fd.typeid, err = pyInt(ft[1]); err != nil {
				return err
			}
			t.fields = append(t.fields, fd)
		}
	}
	if err != nil {
		return err
	}
	p.types = append(p.types, t)
	return nil
}

// setBounds reads the (offset, bits) tuple that starts args.
func (t *typeInfo) setBounds(args []any, n int) error {
	if len(args) != n {
		return fmt.Errorf("expected %d arguments", n)
	}
	b, _ := args[0].([]any)
	if len(b) != 2 {
		return fmt.Errorf("expected (offset, bits)")
	}
	off, ok := b[0].(int64)
	bits, ok2 := b[1].(int64)
	if !ok || !ok2 || bits < 0 || bits > 64 {
		return fmt.Errorf("expected (offset, bits) with 0 <= bits <= 64")
	}
	t.offset, t.bits = off, uint8(bits)
	return nil
}

// addEvent parses one event table line, e.g. 5: (81, 'NNet.Game.SUserFinishedLoadingSyncEvent'),
// and names the event as s2prot does (prefix and suffix stripped).
func addEvent(m map[int64]evType, line, prefix, suffix string) error {
	k, v, ok := strings.Cut(strings.TrimSuffix(line, ","), ":")
	if !ok {
		return fmt.Errorf("expected id: (typeid, name)")
	}
	id, err := strconv.ParseInt(strings.TrimSpace(k), 10, 64)
	if err != nil {
		return err
	}
	val, err := parsePy(strings.TrimSpace(v))
	if err != nil {
		return err
	}
	tup, _ := val.([]any)
	if len(tup) != 2 {
		return fmt.Errorf("expected (typeid, name)")
	}
	typeid, err := pyInt(tup[0])
	if err != nil {
		return err
	}
	name, _ := tup[1].(string)
	name = strings.TrimSuffix(strings.TrimPrefix(name, prefix), suffix)
	m[id] = evType{typeid: typeid, et: &s2prot.EvtType{ID: int(id), Name: name}}
	return nil
}

// pyDict is a parsed Python dict literal, in source order.
type pyDict []struct{ k, v any }

func pyInt(v any) (int, error) {
	n, ok := v.(int64)
	if !ok || n < 0 || n > 1<<20 {
		return 0, fmt.Errorf("expected a type id, got %v", v)
	}
	return int(n), nil
}

// parsePy parses the Python literals the tables use: ints, quoted strings,
// tuples and lists (both as []any) and dicts.
func parsePy(s string) (any, error) {
	ps := pyParser{s: s}
	v, err := ps.value(0)
	if err != nil {
		return nil, err
	}
	ps.space()
	if ps.i != len(ps.s) {
		return nil, fmt.Errorf("trailing %q", ps.s[ps.i:])
	}
	return v, nil
}

type pyParser struct {
	s string
	i int
}

func (p *pyParser) space() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *pyParser) value(depth int) (any, error) {
	if depth > 16 {
		return nil, fmt.Errorf("nested too deep")
	}
	p.space()
	if p.i >= len(p.s) {
		return nil, fmt.Errorf("value cut short")
	}
	switch c := p.s[p.i]; {
	case c == '\'':
		j := strings.IndexByte(p.s[p.i+1:], '\'')
		if j < 0 {
			return nil, fmt.Errorf("unterminated string")
		}
		str := p.s[p.i+1 : p.i+1+j]
		p.i += j + 2
		return str, nil
	case c == '(' || c == '[':
		closer := byte(')')
		if c == '[' {
			closer = ']'
		}
		p.i++
		var items []any
		for {
			p.space()
			if p.i < len(p.s) && p.s[p.i] == closer {
				p.i++
				if items == nil {
					items = []any{}
				}
				return items, nil
			}
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			items = append(items, v)
			if err := p.sep(closer); err != nil {
				return nil, err
			}
		}
	case c == '{':
		p.i++
		var d pyDict
		for {
			p.space()
			if p.i < len(p.s) && p.s[p.i] == '}' {
				p.i++
				return d, nil
			}
			k, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, fmt.Errorf("expected ':' in dict")
			}
			p.i++
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			d = append(d, struct{ k, v any }{k, v})
			if err := p.sep('}'); err != nil {
				return nil, err
			}
		}
	default:
		j := p.i
		if c == '-' {
			j++
		}
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		n, err := strconv.ParseInt(p.s[p.i:j], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("expected a literal at %q", p.s[p.i:])
		}
		p.i = j
		return n, nil
	}
}

// sep consumes a ',' or leaves the closer for the caller.
func (p *pyParser) sep(closer byte) error {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ',' {
		p.i++
		return nil
	}
	if p.i < len(p.s) && p.s[p.i] == closer {
		return nil
	}
	return fmt.Errorf("expected ',' or %q", closer)
}
