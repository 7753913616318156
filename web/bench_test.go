package web

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkLivePage is what the page waits for as the user types: a
// one-slice plan with its bars, the scaling charts left for later.
func BenchmarkLivePage(b *testing.B) {
	h := New(Config{})
	for b.Loop() {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/?model=llama3-8b&tpu=tpu7x-8", nil)
		r.Header.Set(headerScaling, "later")
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET = %d", rec.Code)
		}
	}
}

// BenchmarkFullPage is the same page with its scaling charts, which
// search the plan again for each slice count and batch.
func BenchmarkFullPage(b *testing.B) {
	h := New(Config{})
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/?model=llama3-8b&tpu=tpu7x-8", nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET = %d", rec.Code)
		}
	}
}

// BenchmarkAPIPlan is POST /api/plan for a one-slice plan (Llama 3 8B on
// a tpu7x-8 VM), with the median answer time as ms-p50.
func BenchmarkAPIPlan(b *testing.B) {
	h := New(Config{})
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/api/plan", strings.NewReader(`{"model": "llama3-8b", "tpu": "tpu7x-8"}`))
		r.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			b.Fatalf("POST = %d", rec.Code)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1e3, "ms-p50")
}
