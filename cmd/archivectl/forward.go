// Commands through a running server: while `archivectl serve` holds an
// archive, every other archivectl command for that archive is sent to it
// and run there, in the server's process, against the archive it has open.
// The command line proves it is the archive's owner with the secret the
// server wrote to a file only the owner can read; its output streams back.
//
// The request body is one JSON line (the arguments, the caller's working
// directory) followed by standard input when the command reads it. The
// response is a sequence of frames: one byte saying which stream ('o'
// stdout, 'e' stderr, 'x' exit status), a 4-byte big-endian length, then
// that many bytes.

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/internal/ownerauth"
)

// forwardRequest is the JSON line that starts a forwarded command.
type forwardRequest struct {
	Args  []string `json:"args"`
	Cwd   string   `json:"cwd"`
	Stdin bool     `json:"stdin"`
}

// runningServer is the server that holds an archive, found through its
// serve.json, which proved that it holds the archive's serve.secret.
type runningServer struct {
	endpoint ownerauth.Endpoint
	secret   string
	// auth makes one request the owner's (ownerauth.Authorization).
	auth string
}

// errSecretUnreadable is findServer's error when serve.json names a server
// but the secret is not the caller's to read: another user's server.
var errSecretUnreadable = errors.New("its owner secret is not readable")

// findServer returns the server holding e's archive, or nil when none
// runs. The server must prove that it holds the archive's secret, which is
// never sent: a process on the port of a server that died learns nothing,
// and the stale serve.json and serve.secret it was found through are
// removed.
func findServer(ctx context.Context, e *env) (*runningServer, error) {
	endpointPath := filepath.Join(e.archiveDir, ownerauth.EndpointFile)
	b, err := os.ReadFile(endpointPath)
	if err != nil {
		return nil, nil
	}
	var ep ownerauth.Endpoint
	if json.Unmarshal(b, &ep) != nil || ep.URL == "" {
		return nil, nil
	}
	secretPath := filepath.Join(e.archiveDir, ownerauth.SecretFile)
	secret, err := os.ReadFile(secretPath)
	if err != nil {
		return nil, fmt.Errorf("a server (pid %d) holds this archive, but %w: %v", ep.PID, errSecretUnreadable, err)
	}
	rs := &runningServer{endpoint: ep, secret: strings.TrimSpace(string(secret))}
	rs.auth, err = ownerauth.Authorization(ctx, http.DefaultClient, ep.URL, rs.secret)
	switch {
	case errors.Is(err, ownerauth.ErrNotTheServer) || errors.Is(err, syscall.ECONNREFUSED):
		// The server died without cleaning up; whatever holds its port now
		// is not it. The archive's lock says if a server still holds it.
		removeIfUnchanged(endpointPath, b)
		removeIfUnchanged(secretPath, secret)
		if errors.Is(err, ownerauth.ErrNotTheServer) {
			fmt.Fprintf(e.stderr, "archivectl: ignoring %s: %v; removed the stale %s and %s\n", ownerauth.EndpointFile, err, ownerauth.EndpointFile, ownerauth.SecretFile)
		}
		return nil, nil
	case err != nil:
		return nil, nil
	}
	return rs, nil
}

// forward runs args on the server holding e's archive, if one is running,
// and returns the command's exit status; ok is false when there is no
// server to forward to. pos are the command's positional arguments and fs
// its parsed flags. A takedown that would ask on the terminal asks here,
// where the terminal is, before it is sent.
func forward(ctx context.Context, e *env, c *command, fs *flag.FlagSet, pos, args []string) (code int, ok bool) {
	rs, err := findServer(ctx, e)
	if err != nil {
		fmt.Fprintf(e.stderr, "archivectl: %v\n", err)
		return exitLocked, true
	}
	if rs == nil {
		return 0, false
	}
	if c.name == "delete" && fs.Lookup("yes").Value.String() != "true" && len(pos) == 1 && isTerminal(e.stdin) {
		if code, yes := rs.confirmTakedown(ctx, e, pos[0]); !yes {
			return code, true
		}
		args = append(args, "--yes")
	}
	stdin := io.Reader(nil)
	if c.name == "ingest" && slices.Contains(args, "-") {
		stdin = e.stdin
	}
	return rs.run(ctx, e, args, stdin, e.stdout, e.stderr), true
}

// confirmTakedown asks on e's terminal whether to take down the recording
// id names, as delete does locally, after reading the recording from the
// server; yes is false, with the exit status, when it is not to be done.
func (rs *runningServer) confirmTakedown(ctx context.Context, e *env, id string) (code int, yes bool) {
	var out bytes.Buffer
	if code := rs.run(ctx, e, []string{"show", id, "--json"}, nil, &out, e.stderr); code != exitOK {
		return code, false
	}
	var rec struct {
		ID, Format, Start string
		Players           []struct{ Name string }
	}
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
		fmt.Fprintf(e.stderr, "archivectl: the server's answer to show %s: %v\n", id, err)
		return exitFailure, false
	}
	players := make([]string, len(rec.Players))
	for i, p := range rec.Players {
		players[i] = p.Name
	}
	if !confirmTakedown(e, rec.ID, rec.Format, players, rec.Start) {
		fmt.Fprintln(e.stderr, "not taken down")
		return exitFailure, false
	}
	return exitOK, true
}

// run runs args on the server, as the owner, with stdin (nil: none) sent
// after them, and copies the command's output to stdout and stderr; it
// returns the command's exit status.
func (rs *runningServer) run(ctx context.Context, e *env, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ep := rs.endpoint
	auth := rs.auth
	rs.auth = "" // each answered challenge is good once
	if auth == "" {
		var err error
		if auth, err = ownerauth.Authorization(ctx, http.DefaultClient, ep.URL, rs.secret); err != nil {
			fmt.Fprintf(stderr, "archivectl: the server at %s: %v\n", ep.URL, err)
			return exitFailure
		}
	}
	cwd, _ := os.Getwd()
	req := forwardRequest{Args: args, Cwd: cwd, Stdin: stdin != nil}
	head, _ := json.Marshal(req)
	body := io.Reader(bytes.NewReader(append(head, '\n')))
	if stdin != nil {
		body = io.MultiReader(body, stdin)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL+"/api/v1/cli", body)
	if err != nil {
		fmt.Fprintf(stderr, "archivectl: %v\n", err)
		return exitFailure
	}
	hr.Header.Set("Authorization", auth)
	hr.Header.Set("Content-Type", "application/octet-stream")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		fmt.Fprintf(stderr, "archivectl: the server at %s did not take the command: %v\n", ep.URL, err)
		return exitFailure
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		fmt.Fprintf(stderr, "archivectl: the server at %s refused the command: %s %s\n", ep.URL, resp.Status, bytes.TrimSpace(msg))
		return exitFailure
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var hdr [5]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			fmt.Fprintf(stderr, "archivectl: the server at %s went away mid-command: %v\n", ep.URL, err)
			return exitFailure
		}
		n := int64(binary.BigEndian.Uint32(hdr[1:]))
		switch hdr[0] {
		case 'o':
			_, err = io.CopyN(stdout, br, n)
		case 'e':
			_, err = io.CopyN(stderr, br, n)
		case 'x':
			v, err := io.ReadAll(io.LimitReader(br, n))
			code, cerr := strconv.Atoi(string(v))
			if err != nil || cerr != nil {
				return exitFailure
			}
			return code
		default:
			fmt.Fprintf(stderr, "archivectl: the server at %s sent a frame this build does not know\n", ep.URL)
			return exitFailure
		}
		if err != nil {
			return exitFailure
		}
	}
}

// removeIfUnchanged removes the file at path if it still holds b, so that
// the files of a server started meanwhile are left alone.
func removeIfUnchanged(path string, b []byte) {
	if now, err := os.ReadFile(path); err == nil && bytes.Equal(now, b) {
		os.Remove(path)
	}
}

// cliHandler runs forwarded commands against the server's open archive.
func cliHandler(x *replay.Archive, archiveDir string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		br := bufio.NewReader(r.Body)
		line, err := br.ReadBytes('\n')
		var req forwardRequest
		if err != nil || json.Unmarshal(line, &req) != nil || len(req.Args) == 0 {
			http.Error(w, "a forwarded command starts with a JSON line of its arguments", http.StatusBadRequest)
			return
		}
		if c := findCommand(req.Args[0]); c == nil || c.access == noAccess {
			http.Error(w, fmt.Sprintf("command %q is not run by a server", req.Args[0]), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		fw := &frameWriter{w: w, rc: http.NewResponseController(w)}
		stdin := io.Reader(eofReader{})
		if req.Stdin {
			stdin = br
		}
		e := &env{archiveDir: archiveDir, stdin: stdin, stdout: fw.stream('o'), stderr: fw.stream('e'),
			cwd: req.Cwd, who: replay.LocalActor(), x: x, shared: true}
		code := runCommand(r.Context(), e, req.Args)
		fw.frame('x', []byte(strconv.Itoa(code)))
	})
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// frameWriter writes the framed streams of a forwarded command.
type frameWriter struct {
	mu sync.Mutex
	w  io.Writer
	rc *http.ResponseController
}

func (f *frameWriter) frame(kind byte, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var hdr [5]byte
	hdr[0] = kind
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	if _, err := f.w.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := f.w.Write(p); err != nil {
		return err
	}
	if kind != 'o' {
		f.rc.Flush()
	}
	return nil
}

// stream returns a writer for one of the command's output streams.
func (f *frameWriter) stream(kind byte) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		for len(p) > 0 {
			n := min(len(p), 1<<20)
			if err := f.frame(kind, p[:n]); err != nil {
				return 0, err
			}
			p = p[n:]
		}
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (fn writerFunc) Write(p []byte) (int, error) {
	n := len(p)
	if _, err := fn(p); err != nil {
		return 0, err
	}
	return n, nil
}
