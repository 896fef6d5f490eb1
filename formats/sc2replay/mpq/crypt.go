// This file holds the MPQ crypt table, the name hash and the block
// decryption shared by the hash table, the block table and encrypted files.

package mpq

import "encoding/binary"

// Hash types of HashString.
const (
	HashTableOffset = 0 // home slot of a name in the hash table
	HashNameA       = 1 // first check value stored in a hash entry
	HashNameB       = 2 // second check value stored in a hash entry
	HashFileKey     = 3 // encryption key of tables and files
)

// cryptTable is the 0x500-word table every MPQ hash and cipher draws from. It
// is computed once and never written afterwards.
var cryptTable = buildCryptTable()

func buildCryptTable() *[0x500]uint32 {
	var t [0x500]uint32
	seed := uint32(0x00100001)
	for i1 := 0; i1 < 0x100; i1++ {
		for i, i2 := 0, i1; i < 5; i, i2 = i+1, i2+0x100 {
			seed = (seed*125 + 3) % 0x2AAAAB
			hi := (seed & 0xFFFF) << 16
			seed = (seed*125 + 3) % 0x2AAAAB
			t[i2] = hi | seed&0xFFFF
		}
	}
	return &t
}

// HashString returns the MPQ hash of name for the given hash type
// (HashTableOffset, HashNameA, HashNameB or HashFileKey). Names are
// case-insensitive and '/' equals '\'.
func HashString(name string, hashType uint32) uint32 {
	seed1, seed2 := uint32(0x7FED7FED), uint32(0xEEEEEEEE)
	for i := 0; i < len(name); i++ {
		ch := uint32(name[i])
		switch {
		case ch >= 'a' && ch <= 'z':
			ch -= 'a' - 'A'
		case ch == '/':
			ch = '\\'
		}
		seed1 = cryptTable[hashType<<8+ch] ^ (seed1 + seed2)
		seed2 = ch + seed1 + seed2 + seed2<<5 + 3
	}
	return seed1
}

// decrypt deciphers b in place with key, one little-endian 32-bit word at a
// time. Trailing bytes that do not fill a word are not encrypted in MPQ and
// are left as they are.
func decrypt(b []byte, key uint32) {
	seed := uint32(0xEEEEEEEE)
	for len(b) >= 4 {
		seed += cryptTable[0x400+key&0xFF]
		ch := binary.LittleEndian.Uint32(b) ^ (key + seed)
		key = (^key<<21 + 0x11111111) | key>>11
		seed = ch + seed + seed<<5 + 3
		binary.LittleEndian.PutUint32(b, ch)
		b = b[4:]
	}
}

// Encrypt is the inverse of decrypt: it enciphers b in place with key. The
// reader does not need it; it is exported for code that writes archives,
// such as the test builders in package mpqtest.
func Encrypt(b []byte, key uint32) {
	seed := uint32(0xEEEEEEEE)
	for len(b) >= 4 {
		seed += cryptTable[0x400+key&0xFF]
		plain := binary.LittleEndian.Uint32(b)
		binary.LittleEndian.PutUint32(b, plain^(key+seed))
		key = (^key<<21 + 0x11111111) | key>>11
		seed = plain + seed + seed<<5 + 3
		b = b[4:]
	}
}
