package web_test

import (
	"io"
	"net/http"
	"strconv"
	"testing"
)

// BenchmarkRecordingPageAPI measures, in process and over loopback, the
// API requests the recording page makes on a one-hour teehistorian file
// (the file of TestRecordingPageTimeToInteractive): the events as objects
// and in the column form the page asks for, and 3.5 s of frames around the
// middle, whole and only the types the trails are drawn from. Bytes per
// response are reported as B/resp; unlike the browser's time to
// interactive they do not depend on the machine's load.
//
//	go test ./web -run '^$' -bench RecordingPageAPI -benchtime 20x
func BenchmarkRecordingPageAPI(b *testing.B) {
	s := startServer(b, hourRecording(b))
	id := onlyID(b, s)
	rec, err := s.x.Recording(id)
	if err != nil {
		b.Fatal(err)
	}
	mid := rec.LastTick() / 2
	frames := "/frames?from=" + strconv.FormatInt(mid-150, 10) + "&to=" + strconv.FormatInt(mid+25, 10)
	for _, c := range []struct{ name, path string }{
		{"events", "/events?limit=20000"},
		{"events-compact", "/events?compact=1&limit=20000"},
		{"frames", frames},
		{"frames-types", frames + "&types=player_new,player_diff,player_old,message"},
	} {
		b.Run(c.name, func(b *testing.B) {
			var n int64
			for range b.N {
				req, err := http.NewRequest("GET", s.url+"/api/v1/recordings/"+id+c.path, nil)
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+s.secret)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, err = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if err != nil || res.StatusCode != http.StatusOK {
					b.Fatalf("%s: %s, %v", c.path, res.Status, err)
				}
			}
			b.ReportMetric(float64(n), "B/resp")
		})
	}
}
