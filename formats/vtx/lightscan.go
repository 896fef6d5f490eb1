// This file is Split's light pass over a chunk: it counts the frames and
// hands each entity's unique id, type id and display name to the metadata
// collector, without building the frame model. It walks the same structure
// as the full decoders (so framing errors are still caught) but skips the
// property payloads, and allocates only for entities not seen before.

package vtx

import (
	"google.golang.org/protobuf/encoding/protowire"
)

// lightScan holds scratch space reused across chunks.
type lightScan struct {
	col *collector
	ids [][]byte
}

// chunk scans a decompressed chunk of backend b and returns its frame count.
func (ls *lightScan) chunk(b Backend, raw []byte) (int, error) {
	if b == Protobuf {
		return ls.pbChunk(raw)
	}
	return ls.fbChunk(raw)
}

func (ls *lightScan) pbChunk(b []byte) (int, error) {
	d := &pbDec{root: b}
	frames := 0
	it := d.iter(b)
	for it.next() {
		f := &it.f
		var err error
		switch f.num {
		case 1, 2:
			_, err = d.varint(f)
		case 3, 5:
			_, err = d.bytes(f)
		case 4:
			var m []byte
			if m, err = d.bytes(f); err == nil {
				frames++
				err = ls.pbFrame(d, m)
			}
		}
		if err != nil {
			return 0, err
		}
	}
	return frames, it.err
}

func (ls *lightScan) pbFrame(d *pbDec, b []byte) error {
	it := d.iter(b)
	for it.next() {
		if it.f.num != 1 {
			continue
		}
		m, err := d.bytes(&it.f)
		if err != nil {
			return err
		}
		if err := ls.pbBucket(d, m); err != nil {
			return err
		}
	}
	return it.err
}

func (ls *lightScan) pbBucket(d *pbDec, b []byte) error {
	ls.ids = ls.ids[:0]
	it := d.iter(b)
	for it.next() {
		if it.f.num != 1 {
			continue
		}
		m, err := d.bytes(&it.f)
		if err != nil {
			return err
		}
		ls.ids = append(ls.ids, m)
	}
	if it.err != nil {
		return it.err
	}
	k := 0
	it = d.iter(b)
	for it.next() {
		if it.f.num != 2 {
			continue
		}
		m, err := d.bytes(&it.f)
		if err != nil {
			return err
		}
		if k < len(ls.ids) && len(ls.ids[k]) > 0 && !ls.col.known(ls.ids[k]) {
			typeID, name, err := pbEntityName(d, m, ls.col.schema)
			if err != nil {
				return err
			}
			ls.col.add(ls.ids[k], typeID, name)
		}
		k++
	}
	return it.err
}

// pbEntityName reads an entity's type id and its "Name" string property.
func pbEntityName(d *pbDec, b []byte, s *Schema) (int32, []byte, error) {
	var typeID int32 // proto3 leaves type id 0 out
	it := d.iter(b)
	for it.next() {
		if it.f.num == 1 {
			v, err := d.varint(&it.f)
			if err != nil {
				return 0, nil, err
			}
			typeID = int32(v)
		}
	}
	if it.err != nil {
		return 0, nil, it.err
	}
	slot := s.Struct(typeID).nameSlot()
	if slot < 0 {
		return typeID, nil, nil
	}
	k := 0
	it = d.iter(b)
	for it.next() {
		if it.f.num != 7 || it.f.typ != protowire.BytesType {
			continue
		}
		if k == slot {
			return typeID, it.f.b, nil
		}
		k++
	}
	return typeID, nil, it.err
}

func (ls *lightScan) fbChunk(b []byte) (int, error) {
	d := &fbDec{b: b, budget: len(b)}
	t, err := d.root()
	if err != nil {
		return 0, err
	}
	return d.eachTable(t, 3, func(_ int, frame fbTable) error {
		_, err := d.eachTable(frame, 0, func(_ int, bucket fbTable) error {
			return ls.fbBucket(d, bucket)
		})
		return err
	})
}

func (ls *lightScan) fbBucket(d *fbDec, t fbTable) error {
	is, ni, err := d.vector(t, 0, 4)
	if err != nil {
		return err
	}
	_, err = d.eachTable(t, 1, func(k int, et fbTable) error {
		if k >= ni {
			return nil
		}
		id, err := d.elemString(is, k)
		if err != nil {
			return err
		}
		if len(id) == 0 || ls.col.known(id) {
			return nil
		}
		typeID, err := d.i32(et, 0)
		if err != nil {
			return err
		}
		var name []byte
		if slot := ls.col.schema.Struct(typeID).nameSlot(); slot >= 0 {
			ss, ns, err := d.vector(et, 6, 4)
			if err != nil {
				return err
			}
			if slot < ns {
				if name, err = d.elemString(ss, slot); err != nil {
					return err
				}
			}
		}
		ls.col.add(id, typeID, name)
		return nil
	})
	return err
}

// eachTable calls fn with every table of the vector of tables in field slot
// of t, in order, and returns the vector's length.
func (d *fbDec) eachTable(t fbTable, slot int, fn func(i int, t fbTable) error) (int, error) {
	start, n, err := d.vector(t, slot, 4)
	if err != nil {
		return 0, err
	}
	for i := 0; i < n; i++ {
		et, err := d.elemTable(start, i)
		if err != nil {
			return 0, err
		}
		if err := fn(i, et); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// elemTable reads the table that element i of an offset vector at start
// points to.
func (d *fbDec) elemTable(start, i int) (fbTable, error) {
	e := start + 4*i
	q := e + int(d.u32(e))
	return d.table(q)
}

// elemString returns the bytes of the string element i of an offset vector
// at start points to, without copying.
func (d *fbDec) elemString(start, i int) ([]byte, error) {
	e := start + 4*i
	p := e + int(d.u32(e))
	if err := d.need(p, 4); err != nil {
		return nil, err
	}
	n := int(d.u32(p))
	if n > len(d.b)-p-4 {
		return nil, d.errAt(p, "string of %d bytes runs past the end of the buffer", n)
	}
	return d.b[p+4 : p+4+n], nil
}
