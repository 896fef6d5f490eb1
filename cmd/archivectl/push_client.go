// archivectl push: the HTTP client of the push API (wire.Push answers,
// pushError refusals), with a watchdog on requests that stop moving.

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/wire"
)

// pushClient makes the push API's requests.
type pushClient struct {
	hc    *http.Client
	base  *url.URL
	token string
	agent string
	idle  time.Duration
}

// pushError is an answer other than 200.
type pushError struct {
	Status   int
	Code     string
	Msg      string
	Have     int64
	ID       string
	Takedown *archive.Takedown
	method   string
	source   string
}

func (e *pushError) Error() string {
	msg := e.Msg
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	code := ""
	if e.Code != "" {
		code = " " + e.Code
	}
	return fmt.Sprintf("%s %s: %d%s: %s", e.method, e.source, e.Status, code, msg)
}

// fatal reports whether the answer stops the agent: no file can go.
func (e *pushError) fatal() bool {
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusMisdirectedRequest:
		return true
	}
	return false
}

// away reports whether the answer means the archive is not there (a proxy
// whose backend is down, a server starting or stopping).
func (e *pushError) away() bool {
	return e.Status == http.StatusBadGateway || e.Status == http.StatusServiceUnavailable || e.Status == http.StatusGatewayTimeout
}

// fatalError says why the agent stops, and what to do.
func (e *pushError) fatalError(c *pushClient) error {
	switch e.Status {
	case http.StatusUnauthorized:
		return fmt.Errorf("the archive at %s refuses the token (%s: %s): check --token-file or $REPLAY_TOKEN; make one on the archive with 'archivectl token create --name NAME --role pusher'", c.base.Redacted(), e.Code, e.Msg)
	case http.StatusNotFound:
		return fmt.Errorf("%s has no push API (%s %s: %d %s: %s): give --to the archive's address (behind a proxy, with the path the proxy serves it under), and run an archivectl serve that takes pushes", c.base.Redacted(), e.method, e.source, e.Status, e.Code, e.Msg)
	case http.StatusForbidden:
		return fmt.Errorf("the archive at %s does not let this token push (%s: %s): it needs the pusher role (or admin); make one with 'archivectl token create --name NAME --role pusher'", c.base.Redacted(), e.Code, e.Msg)
	}
	return fmt.Errorf("the archive at %s does not answer to the name %s (%s: %s): start serve with --host %s (behind a proxy: the name the proxy forwards)", c.base.Redacted(), c.base.Hostname(), e.Code, e.Msg, c.base.Hostname())
}

// newPushClient makes the client: connections that are set up within
// pushConnect and kept alive, requests abandoned after pushIdle without
// progress, but no bound on a whole request (a large body on a slow link).
func newPushClient(base *url.URL, token, caFile string) (*pushClient, error) {
	dialer := &net.Dialer{Timeout: pushConnect, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   pushConnect,
		ResponseHeaderTimeout: pushAnswerWait,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   2,
		ForceAttemptHTTP2:     true,
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, usagef("--ca: %v", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usagef("--ca %s: no PEM certificate in it", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &pushClient{hc: &http.Client{Transport: tr}, base: base, token: token,
		agent: "archivectl-push/" + buildVersion(), idle: pushIdle}, nil
}

// buildVersion is the module's version as a User-Agent token ("devel"
// for a build from a work tree).
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// get asks what the archive holds of source.
func (c *pushClient) get(ctx context.Context, source string) (wire.Push, error) {
	return c.do(ctx, http.MethodGet, source, nil, nil)
}

// put sends body, the file's bytes at off, for source; final says the
// file is complete after them.
func (c *pushClient) put(ctx context.Context, source string, off int64, body []byte, final bool) (wire.Push, error) {
	q := url.Values{"offset": {strconv.FormatInt(off, 10)}}
	if final {
		q.Set("final", "1")
	}
	return c.do(ctx, http.MethodPut, source, q, body)
}

// replace sends body, the whole file, for source with replace=1: a
// recording directory's header piece, which its writer replaces whole
// (an HCRP set's preamble.dat); final says the directory is complete or
// idle after it.
func (c *pushClient) replace(ctx context.Context, source string, body []byte, final bool) (wire.Push, error) {
	q := url.Values{"offset": {"0"}, "replace": {"1"}}
	if final {
		q.Set("final", "1")
	}
	return c.do(ctx, http.MethodPut, source, q, body)
}

// do makes one request. The request is abandoned when it makes no
// progress for c.idle while its body is sent or its answer read; the
// server's own time to answer is bounded by the transport's
// ResponseHeaderTimeout.
func (c *pushClient) do(ctx context.Context, method, source string, q url.Values, body []byte) (wire.Push, error) {
	u := *c.base
	u.Path += "/api/v1/push/" + source
	u.RawQuery = q.Encode()
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stall := errors.New("no progress for " + c.idle.String())
	watchdog := time.AfterFunc(c.idle, func() { cancel(stall) })
	defer watchdog.Stop()
	// The transport may read a body after Do returns (it answered early,
	// or failed): every body is closed before do returns, after which it
	// reads no byte of the caller's buffer.
	var bodies requestBodies
	defer bodies.closeAll()
	var rd io.Reader
	if len(body) > 0 {
		rd = bodies.open(body, watchdog, c.idle)
	} else if method == http.MethodPut {
		rd = http.NoBody
	}
	req, err := http.NewRequestWithContext(rctx, method, u.String(), rd)
	if err != nil {
		return wire.Push{}, fmt.Errorf("%s %s: %w", method, source, err)
	}
	if len(body) > 0 {
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return bodies.open(body, watchdog, c.idle), nil }
	}
	if method == http.MethodPut {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("User-Agent", c.agent)
	req.Header.Set("Accept", "application/json")
	if len(body) == 0 {
		watchdog.Stop() // no body to send: ResponseHeaderTimeout bounds the wait
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ue, ok := err.(*url.Error); ok {
			err = ue.Err // the method and URL are said below
		}
		if cause := context.Cause(rctx); errors.Is(cause, stall) && ctx.Err() == nil {
			err = cause
		}
		return wire.Push{}, fmt.Errorf("%s %s: %w", method, source, err)
	}
	defer resp.Body.Close()
	watchdog.Reset(c.idle)
	b, err := io.ReadAll(io.LimitReader(&idleReader{r: resp.Body, t: watchdog, idle: c.idle}, 1<<20))
	if cause := context.Cause(rctx); errors.Is(cause, stall) && ctx.Err() == nil {
		// A body cut by the watchdog may end without an error.
		err = cause
	}
	if err != nil {
		return wire.Push{}, fmt.Errorf("%s %s: reading the answer: %w", method, source, err)
	}
	if resp.StatusCode == http.StatusOK {
		var a wire.Push
		if err := json.Unmarshal(b, &a); err != nil {
			return wire.Push{}, fmt.Errorf("%s %s: the answer is not the push API's (is %s an archive?): %w", method, source, c.base.Redacted(), err)
		}
		return a, nil
	}
	var we wire.PushError
	if json.Unmarshal(b, &we) != nil {
		we.Error.Error = strings.TrimSpace(string(b))
		if len(we.Error.Error) > 200 {
			we.Error.Error = we.Error.Error[:200] + "…"
		}
	}
	var have int64
	if we.Have != nil {
		have = *we.Have
	}
	return wire.Push{}, &pushError{Status: resp.StatusCode, Code: we.Code, Msg: we.Error.Error, Have: have, ID: we.ID,
		Takedown: we.Takedown, method: method, source: source}
}

// idleReader resets t to idle at every read that makes progress; at the
// end of a request body it stops t (the server's time to answer is the
// transport's to bound).
type idleReader struct {
	r    io.Reader
	t    *time.Timer
	idle time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.t.Reset(r.idle)
	}
	if err == io.EOF {
		r.t.Stop()
	}
	return n, err
}

// requestBodies are the bodies made for one request (the first, and those
// of its retries through GetBody).
type requestBodies struct {
	mu     sync.Mutex
	bodies []*requestBody
}

// open makes a body reading b.
func (rb *requestBodies) open(b []byte, t *time.Timer, idle time.Duration) *requestBody {
	body := &requestBody{r: idleReader{r: bytes.NewReader(b), t: t, idle: idle}}
	rb.mu.Lock()
	rb.bodies = append(rb.bodies, body)
	rb.mu.Unlock()
	return body
}

// closeAll closes every body: none reads its buffer after.
func (rb *requestBodies) closeAll() {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	for _, b := range rb.bodies {
		b.Close()
	}
}

// requestBody is a request body that reads nothing once closed: a read
// in progress finishes before Close returns.
type requestBody struct {
	mu     sync.Mutex
	r      idleReader
	closed bool
}

var errBodyClosed = errors.New("request body closed")

func (b *requestBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errBodyClosed
	}
	return b.r.Read(p)
}

func (b *requestBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}
