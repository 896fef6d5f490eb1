// This file encodes and decodes a chunk's resume state: the decoder State at
// the chunk's first byte, in a compact varint form.

package teehistorian

import (
	"encoding/binary"
	"fmt"
)

const resumeVersion = 1

// Flags of one client in the resume state.
const (
	rAlive = 1 << iota
	rInput
	rConnected
	rProto7
	rTeam
	rName
)

// appendResume appends the encoding of st to b:
//
//	version byte, uvarint tick, varint last cid, uvarint client count,
//	per client: uvarint cid, flags byte, [x y], [10 inputs], [team],
//	[uvarint name length, name], then 4 uvarint practice words.
func appendResume(b []byte, st *State) []byte {
	b = append(b, resumeVersion)
	b = binary.AppendUvarint(b, uint64(st.Tick))
	b = AppendVarint(b, st.LastCid)
	n := 0
	for i := range st.Clients {
		if clientFlags(&st.Clients[i]) != 0 {
			n++
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	for i := range st.Clients {
		c := &st.Clients[i]
		f := clientFlags(c)
		if f == 0 {
			continue
		}
		b = binary.AppendUvarint(b, uint64(i))
		b = append(b, f)
		if f&rAlive != 0 {
			b = AppendVarint(AppendVarint(b, c.X), c.Y)
		}
		if f&rInput != 0 {
			for _, v := range c.Input {
				b = AppendVarint(b, v)
			}
		}
		if f&rTeam != 0 {
			b = AppendVarint(b, c.Team)
		}
		if f&rName != 0 {
			b = binary.AppendUvarint(b, uint64(len(c.Name)))
			b = append(b, c.Name...)
		}
	}
	for _, w := range st.Practice {
		b = binary.AppendUvarint(b, w)
	}
	return b
}

func clientFlags(c *Client) byte {
	var f byte
	if c.Alive {
		f |= rAlive
	}
	if c.HasInput {
		f |= rInput
	}
	if c.Connected {
		f |= rConnected
	}
	if c.Proto7 {
		f |= rProto7
	}
	if c.Team != 0 {
		f |= rTeam
	}
	if len(c.Name) > 0 {
		f |= rName
	}
	return f
}

// decodeResume fills st from b.
func decodeResume(st *State, b []byte) error {
	st.Reset()
	bad := func(what string) error { return fmt.Errorf("teehistorian: bad resume state: %s", what) }
	if len(b) == 0 || b[0] != resumeVersion {
		return bad("unknown version")
	}
	p := 1
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(b[p:])
		if n <= 0 {
			return 0, false
		}
		p += n
		return v, true
	}
	iv := func() (int32, bool) {
		v, n, s := readVarint(b[p:])
		if s != varintOK {
			return 0, false
		}
		p += n
		return v, true
	}
	tick, ok := uv()
	if !ok || tick > maxTick {
		return bad("tick")
	}
	st.Tick = int64(tick)
	if st.LastCid, ok = iv(); !ok {
		return bad("last cid")
	}
	n, ok := uv()
	if !ok || n > MaxClients {
		return bad("client count")
	}
	for range n {
		cid, ok := uv()
		if !ok || cid >= MaxClients || p >= len(b) {
			return bad("client id")
		}
		c := &st.Clients[cid]
		f := b[p]
		p++
		c.Alive, c.HasInput, c.Connected, c.Proto7 = f&rAlive != 0, f&rInput != 0, f&rConnected != 0, f&rProto7 != 0
		ok = true
		var v int32
		if c.Alive {
			c.X, ok = iv()
			if ok {
				c.Y, ok = iv()
			}
		}
		for i := 0; ok && c.HasInput && i < InputSize; i++ {
			v, ok = iv()
			c.Input[i] = v
		}
		if ok && f&rTeam != 0 {
			c.Team, ok = iv()
		}
		if ok && f&rName != 0 {
			var l uint64
			l, ok = uv()
			if ok && l <= uint64(len(b)-p) {
				c.Name = append(c.Name[:0], b[p:p+int(l)]...)
				p += int(l)
			} else {
				ok = false
			}
		}
		if !ok {
			return bad(fmt.Sprintf("client %d", cid))
		}
	}
	for i := range st.Practice {
		w, ok := uv()
		if !ok {
			return bad("practice")
		}
		st.Practice[i] = w
	}
	if p != len(b) {
		return bad("trailing bytes")
	}
	return nil
}
