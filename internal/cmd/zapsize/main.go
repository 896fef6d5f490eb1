// Command zapsize prints how the bytes of a bleve (scorch, zap v16) index
// split by field: each field's postings, dictionary and doc values, and the
// stored fields, summed over the index's segment files.
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

type span struct {
	name string
	end  uint64
	dict uint64
	dv   uint64
}

func main() {
	sizes := map[string][3]uint64{} // field: region, dict, docvalues
	var stored, storedIdx, total, docs uint64
	files, _ := filepath.Glob(filepath.Join(os.Args[1], "store", "*.zap"))
	for _, f := range files {
		mm, err := os.ReadFile(f)
		if err != nil {
			panic(err)
		}
		total += uint64(len(mm))
		p := len(mm) - 4 - 4 - 4 - 8 // crc, ver, chunk, dv
		sections := binary.BigEndian.Uint64(mm[p-8:])
		p -= 8
		p -= 8 // fields index
		storedIndex := binary.BigEndian.Uint64(mm[p-8:])
		p -= 8
		nd := binary.BigEndian.Uint64(mm[p-8:])
		docs += nd
		stored += storedIndex
		storedIdx += nd * 8
		pos := sections
		nf, n := binary.Uvarint(mm[pos:])
		pos += uint64(n)
		var spans []span
		for i := uint64(0); i < nf; i++ {
			addr := binary.BigEndian.Uint64(mm[pos:])
			pos += 8
			if addr == 0 {
				continue
			}
			q := addr
			l, n := binary.Uvarint(mm[q:])
			q += uint64(n)
			name := string(mm[q : q+l])
			q += l
			ns, n := binary.Uvarint(mm[q:])
			q += uint64(n)
			for s := uint64(0); s < ns; s++ {
				typ := binary.BigEndian.Uint16(mm[q:])
				sa := binary.BigEndian.Uint64(mm[q+2:])
				q += 10
				if typ != 0 || sa == 0 {
					continue
				}
				r := sa
				dvs, n := binary.Uvarint(mm[r:])
				r += uint64(n)
				dve, n := binary.Uvarint(mm[r:])
				r += uint64(n)
				dl, _ := binary.Uvarint(mm[r:])
				vl, n := binary.Uvarint(mm[dl:])
				end := dl + uint64(n) + vl
				var dv uint64
				if dvs != ^uint64(0) && dve != ^uint64(0) {
					dv = dve - dvs
					if dve > end {
						end = dve
					}
				}
				spans = append(spans, span{name, end, vl, dv})
			}
		}
		sort.Slice(spans, func(i, j int) bool { return spans[i].end < spans[j].end })
		prev := storedIndex + nd*8
		for _, s := range spans {
			v := sizes[s.name]
			v[0] += s.end - prev
			v[1] += s.dict
			v[2] += s.dv
			sizes[s.name] = v
			prev = s.end
		}
	}
	fmt.Printf("%d segments, %d docs, %d bytes\n", len(files), docs, total)
	fmt.Printf("%-10s %10d  %5.1f%%\n", "stored", stored, 100*float64(stored)/float64(total))
	fmt.Printf("%-10s %10d  %5.1f%%\n", "storedidx", storedIdx, 100*float64(storedIdx)/float64(total))
	var names []string
	for k := range sizes {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return sizes[names[i]][0] > sizes[names[j]][0] })
	for _, k := range names {
		v := sizes[k]
		fmt.Printf("%-10s %10d  %5.1f%%  dict %d dv %d\n", k, v[0], 100*float64(v[0])/float64(total), v[1], v[2])
	}
}
