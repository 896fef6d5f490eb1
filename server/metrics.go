package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus collectors, on a registry of its own
// (no global state: two servers in one process do not mix their counts).
type metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	errors       *prometheus.CounterVec
	ingests      *prometheus.CounterVec
	ingestBytes  prometheus.Counter
	authFailures prometheus.Counter
	prunes       prometheus.Counter
	pruned       prometheus.Counter
	pushes       *prometheus.CounterVec
	pushBytes    prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "replay_http_requests_total", Help: "HTTP requests by endpoint and status class.",
		}, []string{"endpoint", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "replay_http_request_seconds", Help: "HTTP request latency by endpoint (search is the query latency).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10, 60},
		}, []string{"endpoint"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "replay_errors_total", Help: "Server-side failures by endpoint or job.",
		}, []string{"endpoint"}),
		ingests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "replay_ingests_total", Help: "Ingested inputs by outcome.",
		}, []string{"outcome"}),
		ingestBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "replay_ingest_bytes_total", Help: "Native bytes of newly archived recordings.",
		}),
		authFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "replay_auth_failures_total", Help: "Requests refused for a bad token.",
		}),
		prunes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "replay_prunes_total", Help: "Prunes carried out (scheduled or requested).",
		}),
		pruned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "replay_pruned_recordings_total", Help: "Recordings removed by prunes.",
		}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "replay_pushes_total", Help: "Pushes (PUT /api/v1/push/...) by the source's state after them, or failed (any error answer).",
		}, []string{"state"}),
		pushBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "replay_push_bytes_total", Help: "New bytes of pushed files received (a retry's bytes held already are not counted).",
		}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.errors, m.ingests, m.ingestBytes, m.authFailures, m.prunes, m.pruned, m.pushes, m.pushBytes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
