// archivectl stats: totals per format and on disk.

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"sort"
	"text/tabwriter"
)

// statsOptions are the flags of archivectl stats.
type statsOptions struct {
	json bool
}

// AddFlags declares the flags on fs.
func (o *statsOptions) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print JSON")
}

func cmdStats() *command {
	o := new(statsOptions)
	return &command{
		name:    "stats",
		args:    "[--json]",
		summary: "count recordings and bytes (native, stored, on disk) per format",
		flags:   o.AddFlags,
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("stats takes no arguments")
			}
			x, err := e.lib()
			if err != nil {
				return err
			}
			st, err := x.Stats(ctx)
			if err != nil {
				return err
			}
			if o.json {
				enc := json.NewEncoder(e.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "FORMAT\tRECORDINGS\tNATIVE\tSTORED\tRATIO\t")
			names := make([]string, 0, len(st.Formats))
			for n := range st.Formats {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				f := st.Formats[n]
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.1f%%\t\n", n, f.Recordings, humanBytes(f.NativeBytes), humanBytes(f.StoredBytes), pct(f.StoredBytes, f.NativeBytes))
			}
			fmt.Fprintf(tw, "total\t%d\t%s\t%s\t%.1f%%\t\n", st.Recordings, humanBytes(st.NativeBytes), humanBytes(st.StoredBytes), pct(st.StoredBytes, st.NativeBytes))
			tw.Flush()
			fmt.Fprintf(e.stdout, "on disk: %s in %d shards; %d held, %d flagged, %d recompressed\n", humanBytes(st.DiskBytes), st.Shards, st.Held, st.Flagged, st.Recompressed)
			if st.SharedBytes > 0 {
				fmt.Fprintf(e.stdout, "shared: %s not stored twice (chunks equal byte for byte across recordings are kept once)\n", humanBytes(st.SharedBytes))
			}
			if len(st.Dicts) > 0 {
				fmt.Fprintf(e.stdout, "header dictionaries: %s, %s stored (in the totals above; 'recompress --retrain' makes new ones)\n",
					plural(len(st.Dicts), "dictionary", "dictionaries"), humanBytes(st.DictBytes))
			}
			if st.RemoteRecordings > 0 || st.CacheBytes > 0 {
				fmt.Fprintf(e.stdout, "local: %s; remote: %s, %s; cached: %s\n",
					humanBytes(st.DiskBytes-st.CacheBytes), plural(st.RemoteRecordings, "recording", ""), humanBytes(st.RemoteBytes), humanBytes(st.CacheBytes))
			}
			return nil
		},
	}
}

func pct(a, b int64) float64 { return 100 * float64(a) / float64(max(b, 1)) }
