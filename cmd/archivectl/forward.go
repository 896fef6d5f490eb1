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
	"github.com/replayarchive/replay/server"
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
	endpoint server.Endpoint
	secret   string
	// auth makes one request the owner's (server.OwnerAuthorization).
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
	endpointPath := filepath.Join(e.archiveDir, server.EndpointFile)
	b, err := os.ReadFile(endpointPath)
	if err != nil {
		return nil, nil
	}
	var ep server.Endpoint
	if json.Unmarshal(b, &ep) != nil || ep.URL == "" {
		return nil, nil
	}
	secretPath := filepath.Join(e.archiveDir, server.SecretFile)
	secret, err := os.ReadFile(secretPath)
	if err != nil {
		return nil, fmt.Errorf("a server (pid %d) holds this archive, but %w: %v", ep.PID, errSecretUnreadable, err)
	}
	rs := &runningServer{endpoint: ep, secret: strings.TrimSpace(string(secret))}
	rs.auth, err = server.OwnerAuthorization(ctx, http.DefaultClient, ep.URL, rs.secret)
	switch {
	case errors.Is(err, server.ErrNotTheServer) || errors.Is(err, syscall.ECONNREFUSED):
		// The server died without cleaning up; whatever holds its port now
		// is not it. The archive's lock says if a server still holds it.
		removeIfUnchanged(endpointPath, b)
		removeIfUnchanged(secretPath, secret)
		if errors.Is(err, server.ErrNotTheServer) {
			fmt.Fprintf(e.stderr, "archivectl: ignoring %s: %v; removed the stale %s and %s\n", server.EndpointFile, err, server.EndpointFile, server.SecretFile)
		}
		return nil, nil
	case err != nil:
		return nil, nil
	}
	return rs, nil
}

// forward runs args on the server holding e's archive, if one is running,
// and returns the command's exit status; ok is false when there is no
// server to forward to.
func forward(ctx context.Context, e *env, c *command, args []string) (code int, ok bool) {
	rs, err := findServer(ctx, e)
	if err != nil {
		fmt.Fprintf(e.stderr, "archivectl: %v\n", err)
		return exitLocked, true
	}
	if rs == nil {
		return 0, false
	}
	ep := rs.endpoint
	cwd, _ := os.Getwd()
	req := forwardRequest{Args: args, Cwd: cwd, Stdin: c.name == "ingest" && slices.Contains(args, "-")}
	head, _ := json.Marshal(req)
	body := io.Reader(bytes.NewReader(append(head, '\n')))
	if req.Stdin {
		body = io.MultiReader(body, e.stdin)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL+"/api/v1/cli", body)
	if err != nil {
		return 0, false
	}
	hr.Header.Set("Authorization", rs.auth)
	hr.Header.Set("Content-Type", "application/octet-stream")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		fmt.Fprintf(e.stderr, "archivectl: the server at %s did not take the command: %v\n", ep.URL, err)
		return exitFailure, true
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		fmt.Fprintf(e.stderr, "archivectl: the server at %s refused the command: %s %s\n", ep.URL, resp.Status, bytes.TrimSpace(msg))
		return exitFailure, true
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var hdr [5]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			fmt.Fprintf(e.stderr, "archivectl: the server at %s went away mid-command: %v\n", ep.URL, err)
			return exitFailure, true
		}
		n := int64(binary.BigEndian.Uint32(hdr[1:]))
		switch hdr[0] {
		case 'o':
			_, err = io.CopyN(e.stdout, br, n)
		case 'e':
			_, err = io.CopyN(e.stderr, br, n)
		case 'x':
			v, err := io.ReadAll(io.LimitReader(br, n))
			code, cerr := strconv.Atoi(string(v))
			if err != nil || cerr != nil {
				return exitFailure, true
			}
			return code, true
		default:
			fmt.Fprintf(e.stderr, "archivectl: the server at %s sent a frame this build does not know\n", ep.URL)
			return exitFailure, true
		}
		if err != nil {
			return exitFailure, true
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
