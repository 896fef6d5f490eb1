package catalog_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/replayarchive/replay/catalog"
	"github.com/replayarchive/replay/internal/pgtest"
)

// BenchmarkCatalog measures each store's Put (one entry a call, as a
// moderator's flag is), Get, and Since (batches of 100 changes).
func BenchmarkCatalog(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) catalog.Catalog
	}{
		{"bolt", func(b *testing.B) catalog.Catalog {
			c, err := catalog.Open(b.Context(), filepath.Join(b.TempDir(), "catalog.db"))
			if err != nil {
				b.Fatal(err)
			}
			return c
		}},
		{"postgres", func(b *testing.B) catalog.Catalog {
			srv := pgtest.Start(b)
			c, err := catalog.Open(b.Context(), srv.NewDatabase(b))
			if err != nil {
				b.Fatal(err)
			}
			return c
		}},
	}
	for _, s := range stores {
		b.Run(s.name, func(b *testing.B) {
			c := s.open(b)
			defer c.Close()
			ctx := b.Context()
			value := []byte(`{"by":"moderator","reason":"spam","at":"2026-01-01T00:00:00Z"}`)
			const n = 1000
			for i := range n {
				if _, err := c.Put(ctx, catalog.KindFlag, keyOf(i), value, "n1"); err != nil {
					b.Fatal(err)
				}
			}
			opsPerSecond := func(b *testing.B) {
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			}
			b.Run("Put", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if _, err := c.Put(ctx, catalog.KindFlag, keyOf(n+i), value, "n1"); err != nil {
						b.Fatal(err)
					}
				}
				opsPerSecond(b)
			})
			b.Run("Get", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if _, ok, err := c.Get(ctx, catalog.KindFlag, keyOf(i%n)); !ok || err != nil {
						b.Fatal(ok, err)
					}
				}
				opsPerSecond(b)
			})
			b.Run("Since100", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					page, err := c.Since(ctx, int64(i%(n-100)), 100)
					if err != nil || len(page) != 100 {
						b.Fatal(len(page), err)
					}
				}
				opsPerSecond(b)
			})
		})
	}
}

// keyOf is the benchmark's i-th flag key.
func keyOf(i int) string {
	return fmt.Sprintf("rec%06d/spam", i)
}
