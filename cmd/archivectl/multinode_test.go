package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/internal/pgtest"
	"github.com/replayarchive/replay/internal/s3test"
	"github.com/replayarchive/replay/wire"
)

// mnChildEnv makes the test binary archivectl itself: TestMain runs main
// when it is set, so the harness runs `serve` as child processes it can
// kill.
const mnChildEnv = "ARCHIVECTL_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mnChildEnv) == "1" {
		main() // exits
	}
	os.Exit(m.Run())
}

// TestThreeNodes runs three `serve` processes against one PostgreSQL
// catalog and one S3 bucket, all writing nodes: uploads to two of them
// while the third repairs in a loop, one killed (SIGKILL) mid-upload and
// restarted; marks made on one node in force on the others within 2 s; one
// node's disk lost and rebuilt from the catalog and the bucket alone, with
// every acknowledged recording there, byte for byte, on every node; and
// search latency on one node while another uploads. It logs the figures
// (FIGURES: …) that docs/PERFORMANCE.md quotes. The nodes' output goes
// into the test's log when it fails, or always with ARCHIVECTL_TEST_LOGS=1.
func TestThreeNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL, an S3 server and three serve processes")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	pg := pgtest.Start(t).NewDatabase(t)
	s3 := s3test.Start(t)
	t.Logf("S3: %s (versitygw: %v)", s3.Endpoint, s3.Real)
	bucket := s3.URL()
	base := t.TempDir()
	c := &mnCluster{t: t}
	common := []string{"--catalog", pg, "--remote", bucket, "--endpoint", s3.Endpoint, "--region", "us-east-1",
		"--credentials-file", s3.CredentialsFile, "--remote-write", "--upload-after", "0s", "--tier-every", "1s"}
	n1 := c.node("N1", filepath.Join(base, "n1"), common)
	n2 := c.node("N2", filepath.Join(base, "n2"), common)
	n3 := c.node("N3", filepath.Join(base, "n3"), append(slices.Clone(common), "--prune-every", "2s"))
	t.Cleanup(c.dumpLogs) // after the nodes stop…
	t.Cleanup(c.stopAll)  // …before PostgreSQL and S3 do (cleanups run last first)
	n1.start()
	var wg sync.WaitGroup
	for _, n := range []*mnNode{n2, n3} {
		wg.Go(n.start)
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// A token made on N1 is in force on every node.
	out, errs, code := mnCLI(ctx, n1.dir, "token", "create", "--name", "harness", "--role", "admin")
	if code != 0 {
		t.Fatalf("token create on N1: exit %d\n%s%s", code, out, errs)
	}
	c.token = strings.TrimSpace(out)
	tokenAt := time.Now()
	tokenLatency := map[string]time.Duration{}
	for _, n := range []*mnNode{n2, n3} {
		wg.Go(func() {
			if !mnPoll(2*time.Second, func() bool {
				resp, _, err := c.do(ctx, n, "GET", "/api/v1/whoami", "", nil)
				return err == nil && resp.StatusCode == http.StatusOK
			}) {
				t.Errorf("the token made on N1 does not work on %s within 2 s", n.name)
			}
			c.mu.Lock()
			tokenLatency[n.name] = time.Since(tokenAt)
			c.mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("the token made on N1 works on N2 after %s, on N3 after %s", tokenLatency["N2"].Round(time.Millisecond), tokenLatency["N3"].Round(time.Millisecond))
	// A policy that removes nothing young, applied by N3's scheduled prune.
	if out, errs, code := mnCLI(ctx, n3.dir, "retention", "set", "--max-age", "30d"); code != 0 {
		t.Fatalf("retention set on N3: exit %d\n%s%s", code, out, errs)
	}

	// The files: N1 uploads seeds 1-12, N2 seeds 9-20 (9-12 the same bytes
	// on both) and one larger file, during which it is killed.
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	gen := func(seed uint64, players int, d time.Duration) *mnFile {
		b := teehistoriangen.Must(t, teehistoriangen.Options{Seed: seed, Players: players, Duration: d, Start: start,
			MapName: fmt.Sprintf("Harness %d", seed%5)})
		return &mnFile{name: fmt.Sprintf("game-%d.teehistorian", seed), data: b}
	}
	files := map[uint64]*mnFile{}
	for s := uint64(1); s <= 20; s++ {
		files[s] = gen(s, 6, 40*time.Second)
	}
	big := gen(100, 32, 8*time.Minute)
	var total int64
	for _, f := range files {
		total += int64(len(f.data))
	}
	t.Logf("files: 20 of %d bytes on average, and one of %d bytes (the one N2 is killed during)", total/20, len(big.data))
	var q1, q2 []*mnFile
	for s := uint64(1); s <= 12; s++ {
		q1 = append(q1, files[s])
	}
	for s := uint64(9); s <= 20; s++ {
		q2 = append(q2, files[s])
		if s == 13 {
			q2 = append(q2, big)
		}
	}
	big.killDuring = true

	// Steps 1 and 2: uploads to N1 and N2 while N3 repairs in a loop; N2
	// killed in the middle of an upload and restarted on its disk.
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	inBucket := c.watchBucket(wctx, []*mnNode{n1, n2, n3})
	checks := c.checkLoop(ctx, n3)
	var restartTook time.Duration
	localAtKill := 0
	upStart := time.Now()
	var ups sync.WaitGroup
	ups.Go(func() { c.uploadAll(ctx, n1, q1, 2, nil) })
	ups.Go(func() {
		c.uploadAll(ctx, n2, q2, 2, func() {
			// Half the body is sent: once N2 is writing it to its spool,
			// it is killed in the middle of the upload.
			spool := filepath.Join(n2.dir, "tmp", "upload-*", big.name)
			if !mnPoll(10*time.Second, func() bool {
				ms, _ := filepath.Glob(spool)
				for _, m := range ms {
					if st, err := os.Stat(m); err == nil && st.Size() > 0 {
						return true
					}
				}
				return false
			}) {
				t.Errorf("N2 never spooled the upload of %s", big.name)
			}
			for _, id := range c.ackedIDs() {
				if _, ok := inBucket(id); !ok && c.ackedBy(id) == n2.name {
					localAtKill++ // acknowledged by N2, on its disk alone
				}
			}
			killed := time.Now()
			n2.kill()
			n2.start()
			restartTook = time.Since(killed)
		})
	})
	ups.Wait()
	uploadsTook := time.Since(upStart)
	uploads := c.uploads.Load()
	checkRuns, checkBad, checkElsewhere := checks()
	// The restarted N2 removed the spool the killed one left.
	if !slices.ContainsFunc(strings.Split(n2.log.String(), "\n"), func(l string) bool {
		return strings.HasPrefix(l, "[N2#2 err]") && strings.Contains(l, "removed upload spools a killed process left")
	}) {
		t.Errorf("the restarted N2 did not log the removal of the killed upload's spool")
	}
	if t.Failed() {
		t.FailNow()
	}
	acked := c.ackedIDs()
	t.Logf("steps 1-2: %d upload requests, %d recordings acknowledged, in %s; N2 killed mid-upload (%d recordings it had acknowledged not yet in the bucket) and serving again %s later; N3's check --repair ran %d times (%d not ok, %d refused: janitor elsewhere)",
		uploads, len(acked), uploadsTook.Round(time.Millisecond), localAtKill, restartTook.Round(time.Millisecond), checkRuns, checkBad, checkElsewhere)
	if len(acked) != 21 {
		t.Errorf("%d recordings acknowledged, want 21 (20 files and the large one)", len(acked))
	}
	if checkRuns == 0 {
		t.Errorf("N3's check --repair never ran")
	}

	// Every node has every recording (its own, or caught up from the bucket).
	caught := time.Now()
	for _, n := range []*mnNode{n1, n2, n3} {
		mnWait(t, 30*time.Second, "every acknowledged recording on "+n.name, func() bool { return c.hasAll(ctx, n, acked) })
	}
	t.Logf("every recording on every node %s after the last acknowledgement", time.Since(caught).Round(time.Millisecond))

	// Step 3: marks travel. A flag on N1 is searchable on N2 and N3, a hold
	// on N3 is on N1 (and N2), a takedown on N2 answers 410 on N1 and N3.
	flagID, holdID, downID := acked[0], acked[1], acked[2]
	lat := map[string]time.Duration{}
	var lw sync.WaitGroup
	var lmu sync.Mutex
	// measure polls cond on n until it holds: the latency counts from
	// sent, before the request that made the change (its own time
	// included: another node may apply it before its node answers).
	measure := func(key string, sent time.Time, n *mnNode, what string, cond func() bool) {
		lw.Go(func() {
			if !mnPoll(15*time.Second, cond) {
				t.Errorf("%s on %s: not within 15 s", what, n.name)
			}
			lmu.Lock()
			lat[key] = time.Since(sent)
			lmu.Unlock()
		})
	}
	sent := time.Now()
	c.mustDo(ctx, n1, "PUT", "/api/v1/recordings/"+flagID+"/flags/harness", `{"note":"made on N1"}`, http.StatusOK)
	lat["(flag request on N1)"] = time.Since(sent)
	for _, n := range []*mnNode{n2, n3} {
		measure("flag "+n.name, sent, n, "flag:harness", func() bool { return c.searchFinds(ctx, n, "flag:harness", flagID) })
	}
	lw.Wait()
	sent = time.Now()
	c.mustDo(ctx, n3, "PUT", "/api/v1/recordings/"+holdID+"/hold", `{"reason":"made on N3"}`, http.StatusOK)
	lat["(hold request on N3)"] = time.Since(sent)
	for _, n := range []*mnNode{n1, n2} {
		measure("hold "+n.name, sent, n, "the hold", func() bool {
			r, status := c.show(ctx, n, holdID)
			return status == http.StatusOK && r.Hold != nil && r.Hold.Reason == "made on N3"
		})
	}
	lw.Wait()
	sent = time.Now()
	c.mustDo(ctx, n2, "DELETE", "/api/v1/recordings/"+downID, `{"reason":"made on N2"}`, http.StatusOK)
	lat["(takedown request on N2)"] = time.Since(sent)
	for _, n := range []*mnNode{n1, n3} {
		measure("takedown "+n.name, sent, n, "410 for the taken-down recording", func() bool {
			_, status := c.show(ctx, n, downID)
			return status == http.StatusGone
		})
	}
	lw.Wait()
	for _, k := range slices.Sorted(maps.Keys(lat)) {
		t.Logf("step 3: %s: %s", k, lat[k].Round(time.Millisecond))
		if !strings.HasPrefix(k, "(") && lat[k] > 2*time.Second {
			t.Errorf("%s took %s, want within 2 s", k, lat[k].Round(time.Millisecond))
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Step 4: every acknowledged recording reaches the bucket.
	var toBucket []time.Duration
	mnWait(t, 60*time.Second, "every acknowledged recording in the bucket", func() bool {
		toBucket = toBucket[:0]
		for _, id := range acked {
			at, ok := inBucket(id)
			if !ok {
				if id == downID {
					continue // taken down before it got there: nothing to wait for
				}
				return false
			}
			toBucket = append(toBucket, at.Sub(c.ackedAt(id)))
		}
		return true
	})
	stopWatch()
	slices.Sort(toBucket)
	bucketP50, bucketMax := mnPercentile(toBucket, 50), mnPercentile(toBucket, 100)
	t.Logf("step 4: acknowledgement to bucket: p50 %s, max %s (%d recordings)", bucketP50.Round(time.Millisecond), bucketMax.Round(time.Millisecond), len(toBucket))

	// Step 5: N1's disk is lost; a fresh N1 on an empty directory rebuilds
	// everything from the catalog and the bucket.
	n1.kill()
	if err := os.RemoveAll(n1.dir); err != nil {
		t.Fatal(err)
	}
	fresh := time.Now()
	n1.start()
	want := map[string]bool{}
	for _, id := range acked {
		if id != downID {
			want[id] = true
		}
	}
	var listed map[string]wire.Recording
	complete := func() bool {
		have, err := c.list(ctx, n1)
		if err != nil {
			return false
		}
		listed = have
		for id := range want {
			if _, ok := have[id]; !ok {
				return false
			}
		}
		return true
	}
	synced := false
	if !mnPoll(10*time.Second, complete) {
		synced = true
		out, errs, code := mnCLI(ctx, n1.dir, "remote", "sync")
		t.Errorf("the fresh N1 lacks recordings 10 s after its start; remote sync: exit %d\n%s%s", code, out, errs)
		mnPoll(20*time.Second, complete)
	}
	rebuilt := time.Since(fresh)
	lost, corrupt := 0, 0
	for id := range want {
		if _, ok := listed[id]; !ok {
			lost++
			t.Errorf("the fresh N1 does not list acknowledged recording %s", id)
		}
	}
	for id := range listed {
		if !want[id] {
			t.Errorf("the fresh N1 lists %s, which was not acknowledged or was taken down", id)
		}
	}
	if _, status := c.show(ctx, n1, downID); status != http.StatusGone {
		t.Errorf("the fresh N1 answers %d for the taken-down recording, want 410", status)
	}
	if r, status := c.show(ctx, n1, flagID); status != http.StatusOK || !slices.ContainsFunc(r.Flags, func(f archive.Flag) bool { return f.Name == "harness" }) {
		t.Errorf("the fresh N1 lost the flag of %s: %d %+v", flagID, status, r.Flags)
	}
	if r, status := c.show(ctx, n1, holdID); status != http.StatusOK || r.Hold == nil {
		t.Errorf("the fresh N1 lost the hold of %s: %d", holdID, status)
	}
	var downloaded int64
	for _, id := range slices.Sorted(maps.Keys(want)) {
		f := c.fileOf(id)
		for _, n := range []*mnNode{n1, n2, n3} {
			resp, body, err := c.do(ctx, n, "GET", "/api/v1/recordings/"+id+"/file", "", nil)
			switch {
			case err != nil:
				corrupt++
				t.Errorf("GET %s/file on %s: %v", id, n.name, err)
			case resp.StatusCode == http.StatusNotFound:
				lost++
				t.Errorf("GET %s/file on %s: 404: %s", id, n.name, body)
			case resp.StatusCode != http.StatusOK || !bytes.Equal(body, f.data):
				corrupt++
				t.Errorf("GET %s/file on %s: %s, %d bytes, want 200 and the %d bytes of %s", id, n.name, resp.Status, len(body), len(f.data), f.name)
			default:
				downloaded += int64(len(body))
			}
		}
	}
	t.Logf("step 5: the fresh N1 lists all %d recordings %s after its start (remote sync needed: %v); %d files (%d bytes) downloaded from the three nodes: %d lost, %d corrupt",
		len(want), rebuilt.Round(time.Millisecond), synced, 3*len(want), downloaded, lost, corrupt)
	if lost != 0 || corrupt != 0 {
		t.Fatalf("%d lost, %d corrupt: want 0 and 0", lost, corrupt)
	}
	// Quiet now: every node's check is clean.
	for _, n := range []*mnNode{n1, n2, n3} {
		if out, errs, code := mnCLI(ctx, n.dir, "check"); code != 0 {
			t.Errorf("check on %s: exit %d\n%s%s", n.name, code, out, errs)
		}
	}

	// Step 6: search latency on N3 while N1 uploads a batch, and while N3
	// then catches the batch up from the bucket (indexing it): at least
	// 200 searches, on until N3 has the whole batch.
	var batch []*mnFile
	for s := uint64(200); s < 224; s++ {
		batch = append(batch, gen(s, 8, 90*time.Second))
	}
	batchDone, onN3 := make(chan struct{}), make(chan struct{})
	var batchTook, batchOnN3 time.Duration
	bs := time.Now()
	go func() {
		defer close(batchDone)
		c.uploadAll(ctx, n1, batch, 2, nil)
		batchTook = time.Since(bs)
	}()
	go func() {
		defer close(onN3)
		<-batchDone
		ids := c.idsOf(batch)
		if !mnPoll(60*time.Second, func() bool { return c.hasAll(ctx, n3, ids) }) {
			t.Errorf("N3 lacks N1's batch 60 s after its upload")
		}
		batchOnN3 = time.Since(bs)
	}()
	queries := []string{"player:Pulsar", `map:"Harness 1"`, "player:deen", "map:harness*", "player:Zwelf", `map:"Harness 3" player:Cor`}
	var lats []time.Duration
	duringUpload, duringCatchUp, hits := 0, 0, 0
	for i := 0; ; i++ {
		caughtUp := false
		select {
		case <-onN3:
			caughtUp = true
		default:
		}
		if caughtUp && i >= 200 || i >= 50000 {
			break
		}
		q := queries[i%len(queries)]
		s := time.Now()
		resp, body, err := c.do(ctx, n3, "GET", "/api/v1/recordings?limit=20&q="+url.QueryEscape(q), "", nil)
		lats = append(lats, time.Since(s))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("search %q on N3: %v %s", q, err, body)
		}
		var res wire.Search
		if err := json.Unmarshal(body, &res); err != nil {
			t.Fatalf("search %q on N3: %v", q, err)
		}
		hits += res.Total
		select {
		case <-batchDone:
			if !caughtUp {
				duringCatchUp++
			}
		default:
			duringUpload++
		}
	}
	<-onN3
	if hits == 0 {
		t.Errorf("no search on N3 found anything")
	}
	slices.Sort(lats)
	searchP50, searchP99, searchMax := mnPercentile(lats, 50), mnPercentile(lats, 99), mnPercentile(lats, 100)
	t.Logf("step 6: %d searches on N3, %d while N1's batch of %d uploads ran (%s), %d while N3 caught it up (all on N3 %s after the batch began): p50 %s, p99 %s, max %s",
		len(lats), duringUpload, len(batch), batchTook.Round(time.Millisecond), duringCatchUp, batchOnN3.Round(time.Millisecond),
		searchP50.Round(time.Microsecond), searchP99.Round(time.Microsecond), searchMax.Round(time.Microsecond))

	t.Logf("FIGURES: three nodes (PostgreSQL catalog, %s bucket, %d cores): token N1->N2 %s, N1->N3 %s; %d upload requests (%d recordings) in %s with N2 SIGKILLed mid-upload (%d of its acknowledged recordings on its disk alone; serving again after %s) and N3 check --repair x%d (%d not ok); "+
		"flag N1->N2 %s, N1->N3 %s; hold N3->N1 %s, N3->N2 %s; takedown N2->N1 %s, N2->N3 %s; ack->bucket p50 %s max %s; "+
		"fresh N1 on an empty disk lists all %d in %s, 0 lost 0 corrupt over %d downloads; search on N3 while N1 uploads %d files and N3 catches them up: p50 %s p99 %s max %s (%d searches)",
		map[bool]string{true: "versitygw", false: "gofakes3"}[s3.Real], runtime.NumCPU(), tokenLatency["N2"].Round(time.Millisecond), tokenLatency["N3"].Round(time.Millisecond),
		uploads, len(acked), uploadsTook.Round(time.Millisecond), localAtKill, restartTook.Round(time.Millisecond), checkRuns, checkBad,
		lat["flag N2"].Round(time.Millisecond), lat["flag N3"].Round(time.Millisecond), lat["hold N1"].Round(time.Millisecond), lat["hold N2"].Round(time.Millisecond),
		lat["takedown N1"].Round(time.Millisecond), lat["takedown N3"].Round(time.Millisecond), bucketP50.Round(time.Millisecond), bucketMax.Round(time.Millisecond),
		len(want), rebuilt.Round(time.Millisecond), 3*len(want), len(batch), searchP50.Round(time.Microsecond), searchP99.Round(time.Microsecond), searchMax.Round(time.Microsecond), len(lats))
}

// mnFile is one file the harness uploads.
type mnFile struct {
	name string
	data []byte
	// killDuring: the node uploaded to is killed halfway through the body.
	killDuring bool
}

// mnAck is an acknowledged upload: the first answer that said the
// recording is archived (201, or 409 duplicate).
type mnAck struct {
	file *mnFile
	at   time.Time
	node string
}

// mnCluster is the harness: the nodes, the token, what was acknowledged.
type mnCluster struct {
	t       *testing.T
	nodes   []*mnNode
	token   string
	mu      sync.Mutex
	acks    map[string]*mnAck
	uploads atomic.Int64
}

func (c *mnCluster) node(name, dir string, flags []string) *mnNode {
	n := &mnNode{t: c.t, name: name, dir: dir, flags: flags, log: new(mnLog)}
	c.nodes = append(c.nodes, n)
	return n
}

func (c *mnCluster) stopAll() {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Go(n.stop)
	}
	wg.Wait()
}

// dumpLogs puts the nodes' logs into the test's log when it failed (or
// ARCHIVECTL_TEST_LOGS is set), and the errors and warnings they logged in
// any case.
func (c *mnCluster) dumpLogs() {
	for _, n := range c.nodes {
		if strings.Contains(n.log.String(), "WARNING: DATA RACE") {
			c.t.Errorf("%s: the race detector found a data race (-race)", n.name)
		}
	}
	for _, n := range c.nodes {
		all := n.log.String()
		if c.t.Failed() || os.Getenv("ARCHIVECTL_TEST_LOGS") != "" {
			if len(all) > 200<<10 {
				all = "…" + all[len(all)-200<<10:]
			}
			c.t.Logf("%s's output (serve's stdout and stderr, every start):\n%s", n.name, all)
			continue
		}
		var bad []string
		for line := range strings.Lines(all) {
			if strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN") {
				bad = append(bad, strings.TrimRight(line, "\n"))
			}
		}
		if len(bad) > 0 {
			if len(bad) > 30 {
				bad = append(bad[:30], fmt.Sprintf("… and %d more", len(bad)-30))
			}
			c.t.Logf("%s logged %d errors and warnings:\n%s", n.name, len(bad), strings.Join(bad, "\n"))
		}
	}
}

// do sends one request to n with the token; the body is read whole.
func (c *mnCluster) do(ctx context.Context, n *mnNode, method, path, ctype string, body io.Reader) (*http.Response, []byte, error) {
	u := n.currentURL()
	if u == "" {
		return nil, nil, fmt.Errorf("%s is not serving", n.name)
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, method, u+path, body)
	if err != nil {
		return nil, nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if l, ok := body.(interface{ Len() int64 }); ok {
		req.ContentLength = l.Len()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// mustDo sends a JSON body and fails the test unless the answer is want.
func (c *mnCluster) mustDo(ctx context.Context, n *mnNode, method, path, body string, want int) []byte {
	c.t.Helper()
	resp, b, err := c.do(ctx, n, method, path, "application/json", strings.NewReader(body))
	if err != nil {
		c.t.Fatalf("%s %s on %s: %v", method, path, n.name, err)
	}
	if resp.StatusCode != want {
		c.t.Fatalf("%s %s on %s: %s, want %d: %s", method, path, n.name, resp.Status, want, b)
	}
	return b
}

// show returns recording id as n shows it, and the answer's status (0 when
// there was none).
func (c *mnCluster) show(ctx context.Context, n *mnNode, id string) (wire.Recording, int) {
	var r wire.Recording
	resp, b, err := c.do(ctx, n, "GET", "/api/v1/recordings/"+id, "", nil)
	if err != nil {
		return r, 0
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, &r); err != nil {
			c.t.Errorf("GET /api/v1/recordings/%s on %s: %v", id, n.name, err)
		}
	}
	return r, resp.StatusCode
}

// list returns the recordings n lists (ls --json, forwarded to it).
func (c *mnCluster) list(ctx context.Context, n *mnNode) (map[string]wire.Recording, error) {
	if n.currentURL() == "" {
		return nil, fmt.Errorf("%s is not serving", n.name)
	}
	out, errs, code := mnCLI(ctx, n.dir, "ls", "--json")
	if code != 0 {
		return nil, fmt.Errorf("ls on %s: exit %d: %s", n.name, code, errs)
	}
	var rs []wire.Recording
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		return nil, fmt.Errorf("ls --json on %s: %v", n.name, err)
	}
	m := make(map[string]wire.Recording, len(rs))
	for _, r := range rs {
		m[r.ID] = r
	}
	return m, nil
}

// hasAll reports whether n lists every recording of ids.
func (c *mnCluster) hasAll(ctx context.Context, n *mnNode, ids []string) bool {
	have, err := c.list(ctx, n)
	if err != nil {
		return false
	}
	for _, id := range ids {
		if _, ok := have[id]; !ok {
			return false
		}
	}
	return true
}

// searchFinds reports whether query q on n finds recording id.
func (c *mnCluster) searchFinds(ctx context.Context, n *mnNode, q, id string) bool {
	resp, b, err := c.do(ctx, n, "GET", "/api/v1/recordings?limit=200&q="+url.QueryEscape(q), "", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		return false
	}
	var res wire.Search
	if json.Unmarshal(b, &res) != nil {
		return false
	}
	return slices.ContainsFunc(res.Hits, func(h wire.Hit) bool { return h.ID == id })
}

// uploadAll uploads files to n with workers at a time, each until it is
// acknowledged. A file marked killDuring has n killed halfway through its
// body: kill does it (and restarts n), and the upload is tried again.
func (c *mnCluster) uploadAll(ctx context.Context, n *mnNode, files []*mnFile, workers int, kill func()) {
	next := make(chan *mnFile)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for f := range next {
				c.uploadOne(ctx, n, f, kill)
			}
		})
	}
	for _, f := range files {
		next <- f
	}
	close(next)
	wg.Wait()
}

func (c *mnCluster) uploadOne(ctx context.Context, n *mnNode, f *mnFile, kill func()) {
	deadline := time.Now().Add(90 * time.Second)
	for attempt := 0; ; attempt++ {
		var body io.Reader = bytes.NewReader(f.data)
		if f.killDuring && attempt == 0 && kill != nil {
			hr := &mnHalfReader{r: bytes.NewReader(f.data), size: int64(len(f.data)), half: int64(len(f.data) / 2), reached: make(chan struct{}), resume: make(chan struct{})}
			go func() {
				select {
				case <-hr.reached:
					kill()
				case <-ctx.Done():
				}
				close(hr.resume)
			}()
			body = hr
		}
		c.uploads.Add(1)
		resp, b, err := c.do(ctx, n, "POST", "/api/v1/recordings?name="+url.QueryEscape(f.name), "application/octet-stream", body)
		if err == nil {
			var id string
			switch resp.StatusCode {
			case http.StatusCreated, http.StatusOK:
				var up wire.Upload
				if err := json.Unmarshal(b, &up); err != nil || up.ID == "" {
					c.t.Errorf("upload of %s to %s: %s: %s", f.name, n.name, resp.Status, b)
					return
				}
				id = up.ID
			case http.StatusConflict:
				var we wire.Error
				if err := json.Unmarshal(b, &we); err != nil || we.Code != "duplicate" || we.ID == "" {
					c.t.Errorf("upload of %s to %s: %s: %s", f.name, n.name, resp.Status, b)
					return
				}
				id = we.ID
			default:
				if resp.StatusCode < 500 {
					c.t.Errorf("upload of %s to %s: %s: %s", f.name, n.name, resp.Status, b)
					return
				}
				err = fmt.Errorf("%s: %s", resp.Status, b)
			}
			if id != "" {
				c.ack(id, f, n.name)
				return
			}
		}
		if f.killDuring && attempt == 0 {
			c.t.Logf("upload of %s to %s cut short by the kill, as meant: %v", f.name, n.name, err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			c.t.Errorf("upload of %s to %s: not acknowledged within 90 s: %v", f.name, n.name, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *mnCluster) ack(id string, f *mnFile, node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.acks == nil {
		c.acks = map[string]*mnAck{}
	}
	if a, ok := c.acks[id]; ok {
		if !bytes.Equal(a.file.data, f.data) {
			c.t.Errorf("%s and %s were both acknowledged as recording %s", a.file.name, f.name, id)
		}
		return
	}
	c.acks[id] = &mnAck{file: f, at: time.Now(), node: node}
}

func (c *mnCluster) ackedIDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.acks))
}

func (c *mnCluster) ackedBy(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acks[id].node
}

func (c *mnCluster) ackedAt(id string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acks[id].at
}

// idsOf returns the recordings files were acknowledged as.
func (c *mnCluster) idsOf(files []*mnFile) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for id, a := range c.acks {
		if slices.Contains(files, a.file) {
			ids = append(ids, id)
		}
	}
	return ids
}

func (c *mnCluster) fileOf(id string) *mnFile {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acks[id].file
}

// watchBucket notes, every 100 ms until ctx ends, when each acknowledged
// recording is first shown in the bucket (location remote or both) by any
// node, and returns the lookup of that time.
func (c *mnCluster) watchBucket(ctx context.Context, nodes []*mnNode) func(id string) (time.Time, bool) {
	var mu sync.Mutex
	seen := map[string]time.Time{}
	go func() {
		for ctx.Err() == nil {
			for _, id := range c.ackedIDs() {
				mu.Lock()
				_, done := seen[id]
				mu.Unlock()
				if done {
					continue
				}
				for _, n := range nodes {
					r, status := c.show(ctx, n, id)
					if status == http.StatusOK && (r.Location == "remote" || r.Location == "both") {
						mu.Lock()
						seen[id] = time.Now()
						mu.Unlock()
						break
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func(id string) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		at, ok := seen[id]
		return at, ok
	}
}

// checkLoop runs check --repair on n (forwarded to it) over and over until
// the returned func is called, which says how many ran, how many did not
// end ok, and how many were refused because another node holds the
// janitor's lease.
func (c *mnCluster) checkLoop(ctx context.Context, n *mnNode) func() (runs, bad, elsewhere int) {
	stop := make(chan struct{})
	done := make(chan struct{})
	var runs, bad, elsewhere int
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			out, errs, code := mnCLI(ctx, n.dir, "check", "--repair")
			runs++
			switch {
			case code == 0:
			case strings.Contains(errs, "another node is the janitor"):
				elsewhere++
			default:
				bad++
				if bad <= 5 {
					c.t.Logf("check --repair on %s: exit %d\n%s%s", n.name, code, out, errs)
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return func() (int, int, int) {
		close(stop)
		<-done
		return runs, bad, elsewhere
	}
}

// mnNode is one serve process, restarted on the same directory as needed.
type mnNode struct {
	t     *testing.T
	name  string
	dir   string
	flags []string
	log   *mnLog
	mu    sync.Mutex
	url   string
	cmd   *exec.Cmd
	done  chan struct{}
	runs  int
}

func (n *mnNode) currentURL() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.url
}

// start runs serve and waits until it serves.
func (n *mnNode) start() {
	exe, err := os.Executable()
	if err != nil {
		n.t.Error(err)
		return
	}
	n.mu.Lock()
	n.runs++
	run := n.runs
	n.mu.Unlock()
	args := append([]string{"--archive", n.dir, "serve", "--listen", "127.0.0.1:0", "--grace", "2s"}, n.flags...)
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), mnChildEnv+"=1")
	urlc := make(chan string, 1)
	cmd.Stdout = &mnLineWriter{prefix: fmt.Sprintf("[%s#%d out] ", n.name, run), log: n.log, line: func(l string) {
		if rest, ok := strings.CutPrefix(l, "serving "); ok {
			if i := strings.LastIndex(rest, " at "); i >= 0 {
				select {
				case urlc <- strings.TrimSpace(rest[i+len(" at "):]):
				default:
				}
			}
		}
	}}
	cmd.Stderr = &mnLineWriter{prefix: fmt.Sprintf("[%s#%d err] ", n.name, run), log: n.log}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		n.t.Errorf("start %s: %v", n.name, err)
		return
	}
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(n.log, "[%s#%d] exited: %v\n", n.name, run, err)
		close(done)
	}()
	select {
	case u := <-urlc:
		n.mu.Lock()
		n.url, n.cmd, n.done = u, cmd, done
		n.mu.Unlock()
		n.t.Logf("%s (run %d) serving at %s after %s", n.name, run, u, time.Since(began).Round(time.Millisecond))
	case <-done:
		n.t.Errorf("%s (run %d) exited before serving:\n%s", n.name, run, n.log.String())
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		n.t.Errorf("%s (run %d) not serving within 60 s:\n%s", n.name, run, n.log.String())
	}
}

// kill ends the process at once (SIGKILL; TerminateProcess on Windows).
func (n *mnNode) kill() {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.url, n.cmd = "", nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-done
}

// stop asks the process to shut down (SIGINT), then kills it.
func (n *mnNode) stop() {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.url, n.cmd = "", nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		cmd.Process.Kill()
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		n.t.Errorf("%s did not stop within 20 s of SIGINT; killed", n.name)
		cmd.Process.Kill()
		<-done
	}
}

// mnLog collects the output of a node's processes.
type mnLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *mnLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *mnLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// mnLineWriter writes whole lines to log with a prefix, and gives each to
// line.
type mnLineWriter struct {
	prefix string
	log    io.Writer
	line   func(string)
	buf    []byte
}

func (w *mnLineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		l := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		fmt.Fprintf(w.log, "%s%s\n", w.prefix, l)
		if w.line != nil {
			w.line(l)
		}
	}
	return len(p), nil
}

// mnHalfReader reads r, stopping halfway (closing reached) until resume is
// closed.
type mnHalfReader struct {
	r       io.Reader
	n       int64
	size    int64
	half    int64
	reached chan struct{}
	resume  chan struct{}
	stopped bool
}

func (h *mnHalfReader) Len() int64 { return h.size }

func (h *mnHalfReader) Read(p []byte) (int, error) {
	if h.n >= h.half {
		if !h.stopped {
			h.stopped = true
			close(h.reached)
			<-h.resume
		}
	} else if rest := h.half - h.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	k, err := h.r.Read(p)
	h.n += int64(k)
	return k, err
}

// mnCLI runs archivectl in this process: with a server holding dir, the
// command is forwarded to it.
func mnCLI(ctx context.Context, dir string, args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = run(ctx, append([]string{"--archive", dir}, args...), strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// mnWait polls cond every 10 ms until it holds, failing the test after
// within.
func mnWait(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !mnPoll(within, cond) {
		t.Fatalf("%s: not within %s", what, within)
	}
}

func mnPoll(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// mnPercentile returns the p-th percentile of sorted ds (nearest rank).
func mnPercentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := (len(ds)*p + 99) / 100
	return ds[max(0, min(len(ds)-1, i-1))]
}
