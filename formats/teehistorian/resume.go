// This file encodes and decodes a chunk's resume state: the decoder State at
// the chunk's first byte, in a compact varint form.

package teehistorian

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Resume versions: 2 when a client carries a name message or a login (the
// rNameMsg and rAuth fields), else 1, which older builds read too.
const (
	resumeVersion   = 1
	resumeVersionEx = 2
)

// Flags of one client in the resume state.
const (
	rAlive = 1 << iota
	rInput
	rConnected
	rProto7
	rTeam
	rName
	rNameMsg // version 2
	rAuth    // version 2
)

// resumeAuthKinds are the login records a resume names, by their stored
// code (the index): stored codes do not follow ExKind's numbering.
var resumeAuthKinds = [...]ExKind{ExAuthInit, ExAuthLogin, ExAuthInitRole}

// appendResume appends the encoding of st to b:
//
//	version byte, uvarint tick, varint last cid, uvarint client count,
//	per client: uvarint cid, flags byte, [x y], [10 inputs], [team],
//	[uvarint name length, name], [uvarint length, name message],
//	[auth kind byte, uvarint length, auth payload], then 4 uvarint
//	practice words.
func appendResume(b []byte, st *State) []byte {
	v := byte(resumeVersion)
	for i := range st.Clients {
		if clientFlags(&st.Clients[i])&(rNameMsg|rAuth) != 0 {
			v = resumeVersionEx
			break
		}
	}
	b = append(b, v)
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
		if f&rNameMsg != 0 {
			b = binary.AppendUvarint(b, uint64(len(c.Intro.NameMsg)))
			b = append(b, c.Intro.NameMsg...)
		}
		if f&rAuth != 0 {
			b = append(b, byte(slices.Index(resumeAuthKinds[:], c.Intro.AuthKind)))
			b = binary.AppendUvarint(b, uint64(len(c.Intro.Auth)))
			b = append(b, c.Intro.Auth...)
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
	if c.Intro != nil && len(c.Intro.NameMsg) > 0 {
		f |= rNameMsg
	}
	if c.Intro != nil && c.Intro.AuthKind != ExUnknown {
		f |= rAuth
	}
	return f
}

// decodeResume fills st from b.
func decodeResume(st *State, b []byte) error {
	st.Reset()
	bad := func(what string) error { return fmt.Errorf("teehistorian: bad resume state: %s", what) }
	if len(b) == 0 || b[0] != resumeVersion && b[0] != resumeVersionEx {
		return bad("unknown version")
	}
	version := b[0]
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
		if f&(rNameMsg|rAuth) != 0 && version < resumeVersionEx {
			ok = false
		}
		bytesField := func(dst []byte) ([]byte, bool) {
			l, ok := uv()
			if !ok || l > uint64(len(b)-p) {
				return dst, false
			}
			dst = append(dst[:0], b[p:p+int(l)]...)
			p += int(l)
			return dst, true
		}
		if ok && f&rName != 0 {
			c.Name, ok = bytesField(c.Name)
		}
		var in Intro
		if ok && f&rNameMsg != 0 {
			in.NameMsg, ok = bytesField(nil)
		}
		if ok && f&rAuth != 0 {
			if p < len(b) && int(b[p]) < len(resumeAuthKinds) {
				in.AuthKind = resumeAuthKinds[b[p]]
				p++
				in.Auth, ok = bytesField(nil)
			} else {
				ok = false
			}
		}
		if len(in.NameMsg) > 0 || in.AuthKind != ExUnknown {
			c.Intro = &in
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
