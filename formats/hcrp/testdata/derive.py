#!/usr/bin/env python3
"""Derives the HCRP test vectors in this directory from the tables of
shared/specs/vtx-and-hcrp.md part B, independently of the Go code.

Run from this directory: python3 derive.py  (rewrites the *.hex files).
Each .hex file is hex bytes with '#' comments saying which table row a
byte run comes from. The only value not derived here is the compressed
length of the tiny file's chunk (zstd output size), passed in as ZLEN.
"""
import math, struct, sys

def varint(v):  # B.4 VAR_INT: 7-bit groups, low first, from the unsigned 32-bit pattern
    u = v & 0xffffffff
    out = b""
    while u >= 0x80:
        out += bytes([u & 0x7f | 0x80]); u >>= 7
    return out + bytes([u])

def varlong(v):
    u = v & 0xffffffffffffffff
    out = b""
    while u >= 0x80:
        out += bytes([u & 0x7f | 0x80]); u >>= 7
    return out + bytes([u])

def jround(x): return math.floor(x + 0.5)  # Java Math.round
def zz(n): return ((n << 1) ^ (n >> 63)) & 0xffffffffffffffff
def d(x): return struct.pack(">d", x)
def f(x): return struct.pack(">f", x)
def pos(x, y, z, yaw, pitch): return d(x) + d(y) + d(z) + f(yaw) + f(pitch)  # B.4 POS
def lppos(x, y, z, yaw, pitch):  # B.4 ReplayTypes.LP_POS
    return (varlong(zz(jround(x * 4096))) + varlong(zz(jround(y * 4096))) + varlong(zz(jround(z * 4096)))
            + struct.pack(">H", jround(yaw * 65536 / 360) & 0xffff) + struct.pack(">H", jround(pitch * 65536 / 360) & 0xffff))
def lpvec3(x, y, z):  # B.4 LP_VECTOR3 (vanilla LpVec3 writer)
    m = max(abs(x), abs(y), abs(z))
    if m < 3.051944088384301e-5: return b"\x00"
    s = math.ceil(m); big = (s & 3) != s
    markers = (s & 3 | 4) if big else s
    pk = lambda v: jround((v / s * 0.5 + 0.5) * 32766)
    buf = markers | pk(x) << 3 | pk(y) << 18 | pk(z) << 33
    out = bytes([buf & 0xff, buf >> 8 & 0xff]) + struct.pack(">I", buf >> 16 & 0xffffffff)
    return out + (varint(s >> 2) if big else b"")
def blockpos(x, y, z): return struct.pack(">q", ((x & 0x3ffffff) << 38 | (z & 0x3ffffff) << 12 | (y & 0xfff)) - (1 << 64 if x & 0x2000000 else 0))
def nstr(s): b = s.encode(); return struct.pack(">H", len(b)) + b   # NBT string
def mstr(s): b = s.encode(); return varint(len(b)) + b              # B.4 STRING

def hexlines(rows):
    return "".join(f"{r.hex(' ')}  # {c}\n" if r else f"# {c}\n" for r, c in rows)

# --- events (B.5), one per line: name, bytes ---
events = [
    ("delta_move entity=0 d=(1,-0.5,0.25) yaw=90 pitch=-45 vel=0", varint(0) + varint(0) + lppos(1, -0.5, 0.25, 90, -45) + lpvec3(0, 0, 0)),
    ("absolute_move entity=3 pos=(1.5,64,-2.25,0,0) vel=(0.5,0,0)", varint(1) + varint(3) + pos(1.5, 64, -2.25, 0, 0) + lpvec3(0.5, 0, 0)),
    ("absolute_move entity=3 pos=(0,0,0,0,0) vel=(5,0,-1) (big scale)", varint(1) + varint(3) + pos(0, 0, 0, 0, 0) + lpvec3(5, 0, -1)),
    ("entity_state entity=1 pose=sneaking(5) flags=0x0a", varint(2) + varint(1) + varint(5) + b"\x0a"),
    ("hand_animation entity=2 hand=off(1)", varint(3) + varint(2) + varint(1)),
    ("item_use entity=2 hand=none", varint(4) + varint(2) + b"\x00"),
    ("item_use entity=2 hand=main(0)", varint(4) + varint(2) + b"\x01" + varint(0)),
    ("set_item entity=0 slot45={}", varint(5) + varint(0) + varint(1) + varint(45) + b"\x0a\x00"),
    ("change_held_slot entity=0 slot=8", varint(6) + varint(0) + varint(8)),
    ("set_block pos=(-1,64,2) state=1", varint(7) + blockpos(-1, 64, 2) + varint(1)),
    ("spawn_entity entity=1 type=149 pos=(0,64,0,0,0)", varint(8) + varint(1) + varint(149) + pos(0, 64, 0, 0, 0)),
    ("destroy_entity entity=300", varint(9) + varint(300)),
    ("run_start", varint(10)),
    ("checkpoint_reached id=cp-1 time=12345", varint(11) + mstr("cp-1") + varlong(12345)),
    ("checkpoint_reset reason=sneak(6) time=1000", varint(12) + varint(6) + varlong(1000)),
    ("run_end reason=finish(0) time=65432", varint(13) + varint(0) + varlong(65432)),
    ("clear_ghost_blocks", varint(14)),
]
with open("events.hex", "w") as fh:
    fh.write("# One event per line (B.5): hex of VarInt id + payload, then '#' and the event.\n")
    for name, b in events:
        fh.write(f"{b.hex(' ')}  # {name}\n")

# --- VarInt / VarLong (B.4) ---
with open("varint.hex", "w") as fh:
    fh.write("# kind value: hex (B.4 VAR_INT / VAR_LONG)\n")
    for v in [0, 1, 127, 128, 300, 2097151, 2147483647, -1, -2147483648]:
        fh.write(f"varint {v}: {varint(v).hex(' ')}\n")
    for v in [0, 1, 12345, 2**31, 2**63 - 1, -1]:
        fh.write(f"varlong {v}: {varlong(v).hex(' ')}\n")

# --- index entries (B.3 Index) ---
entries = [(0, 100, 1, 0, 2000, 30000), (100, 100, 0, (1 << 32) | 0x1234, 300, 128), (200, 7, 1, 0x7fffffffffff, 1, 1)]
with open("index.hex", "w") as fh:
    fh.write("# One index entry per line: start tick, ticks, flags, offset, compressed, uncompressed.\n")
    for st, n, fl, off, cl, ul in entries:
        b = varint(st) + varint(n) + bytes([fl]) + struct.pack(">q", off) + varint(cl) + varint(ul)
        fh.write(f"{b.hex(' ')}  # {st} {n} {fl} {off} {cl} {ul}\n")

# --- metadata (B.3 Metadata: network NBT, nameless root) ---
meta = (b"\x0a" + b"\x08" + nstr("map") + nstr("spire")
        + b"\x09" + nstr("anticheat") + b"\x0a" + struct.pack(">i", 1)
        + b"\x08" + nstr("type") + nstr("fly") + b"\x03" + nstr("tick") + struct.pack(">i", 40)
        + b"\x08" + nstr("player") + nstr("p") + b"\x08" + nstr("detail") + nstr("vl=3") + b"\x00"
        + b"\x00")
with open("meta.hex", "w") as fh:
    fh.write("# Meta{Map: \"spire\", Anticheat: [{fly, 40, p, vl=3}]} as network NBT\n")
    fh.write(hexlines([(b"\x0a", "root compound tag type, no name (network NBT)"),
                       (b"\x08" + nstr("map") + nstr("spire"), "string map = spire"),
                       (b"\x09" + nstr("anticheat") + b"\x0a" + struct.pack(">i", 1), "list anticheat of 1 compound"),
                       (b"\x08" + nstr("type") + nstr("fly"), "string type"),
                       (b"\x03" + nstr("tick") + struct.pack(">i", 40), "int tick"),
                       (b"\x08" + nstr("player") + nstr("p"), "string player"),
                       (b"\x08" + nstr("detail") + nstr("vl=3"), "string detail"),
                       (b"\x00", "end of flag compound"), (b"\x00", "end of root")]))

# --- tiny recording: 3 ticks, one chunk, snapshot at tick 0 (B.3 Chunk) ---
spawn = varint(8) + varint(0) + varint(149) + pos(0.5, 64, 0.5, 0, 0)
move = varint(0) + varint(0) + lppos(0.25, 0, 0, 0, 0) + lpvec3(0.25, 0, 0)
chunk = [(varint(0) + struct.pack(">h", 2), "tick 0, 2 events"), (spawn, "spawn_entity 0 type 149 at (0.5,64,0.5) [snapshot]"),
         (varint(10), "run_start"), (varint(1) + struct.pack(">h", 1), "tick 1, 1 event"),
         (move, "delta_move 0 d=(0.25,0,0) vel=(0.25,0,0)"), (varint(2) + struct.pack(">h", 0), "tick 2, no events (empty ticks are not skipped)")]
raw = b"".join(r for r, _ in chunk)
with open("tiny-chunk.hex", "w") as fh:
    fh.write("# Decompressed chunk 0 of tiny.hcrp: VarInt tick | i16 event count | events\n")
    fh.write(hexlines(chunk))

meta_tiny = b"\x0a" + b"\x08" + nstr("map") + nstr("spire") + b"\x00"
zlen = int(sys.argv[1]) if len(sys.argv) > 1 else 0
index = varint(0) + varint(3) + b"\x01"
idx_len = len(index) + 8 + len(varint(zlen)) + len(varint(len(raw)))
off = 256 + len(meta_tiny) + idx_len
index += struct.pack(">q", off) + varint(zlen) + varint(len(raw))
wid = bytes(range(1, 17))
ts = 1786449600000  # 2026-08-11T12:00:00Z
hdr = (b"HCRP" + struct.pack(">hh", 4, 0) + wid + bytes([16]) + bytes(16) + struct.pack(">q", ts)
       + struct.pack(">h", 0) + struct.pack(">iiiii", len(meta_tiny), idx_len, 3, 1, 4671))
rows = [(b"HCRP", "magic 0x48435250"), (struct.pack(">h", 4), "version 4"), (b"\x00\x00", "flags"),
        (wid, "world id 01020304-0506-0708-090a-0b0c0d0e0f10"), (bytes([16]), "world version length 16"),
        (bytes(16), "world version (16 zero bytes, as ReplayManager writes)"),
        (struct.pack(">q", ts), "timestamp 2026-08-11T12:00:00Z in ms"), (b"\x00\x00", "dictionary 0"),
        (struct.pack(">i", len(meta_tiny)), "metadata length"), (struct.pack(">i", idx_len), "index length"),
        (struct.pack(">i", 3), "tick count"), (struct.pack(">i", 1), "chunk count"), (struct.pack(">i", 4671), "data version"),
        (bytes(256 - len(hdr)), "zero padding to 256"),
        (meta_tiny, "metadata {map: spire}"),
        (index, f"index: start 0, 3 ticks, flags 1 (snapshot), offset {off}, compressed {zlen} (zstd output size), uncompressed {len(raw)}")]
with open("tiny-preamble.hex", "w") as fh:
    fh.write("# Preamble of tiny.hcrp (B.3 header table, metadata, index)\n")
    fh.write(hexlines(rows))
