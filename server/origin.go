// Requests from pages of other sites: every web page the operator opens
// is hostile. The server answers only to the names it is known by (so a
// page whose own name was rebound to this machine's address reads
// nothing), and a request that changes anything must come from the page
// of this server, or from no page at all, and must say its body is JSON
// (or bytes, for uploads), which a page of another origin cannot send
// without the browser asking this server first; the server never says
// yes (it answers no CORS preflight).

package server

import (
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// hostAllowed reports whether a request's Host header names this server:
// an IP address (a page's own name cannot be an address of ours), localhost,
// or one of the names in Config.Hosts.
func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	host = strings.TrimSuffix(host, ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	for _, h := range s.cfg.Hosts {
		if strings.EqualFold(host, h) {
			return true
		}
	}
	return false
}

// checkHost wraps the whole server: a request whose Host is not one of
// this server's names is refused before anything else.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			writeError(w, http.StatusMisdirectedRequest, "unknown_host",
				"Host: "+r.Host+" is not a name of this server (it answers to its IP addresses, localhost and the names given with serve --host)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// changes reports whether a request's method may change the archive.
func changes(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// crossOrigin returns why a request that changes the archive must be
// refused as coming from another origin's page, or "" when it may go on:
// the browser's Sec-Fetch-Site says the page is this server's (or there is
// no page), and an Origin, when sent, is this server's own.
func crossOrigin(r *http.Request) string {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return "the browser says this request comes from a page of another origin (Sec-Fetch-Site: " + site + ")"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	if origin != "http://"+r.Host && origin != "https://"+r.Host {
		return "the request comes from a page of another origin (Origin: " + origin + ")"
	}
	return ""
}

// bodyTypeRefused returns why the body of a request that changes the
// archive is refused, or "": a body must be declared application/json or
// application/octet-stream, types a page of another origin cannot send
// without a preflight. A request without a body needs no type.
func bodyTypeRefused(r *http.Request) string {
	ct := r.Header.Get("Content-Type")
	if ct == "" && (r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody) {
		return ""
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || mt == "application/octet-stream") {
		return ""
	}
	if ct == "" {
		ct = "none"
	}
	return "a request that changes the archive sends its body as application/json (uploads: application/octet-stream); Content-Type: " + ct
}
