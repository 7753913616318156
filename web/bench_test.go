package web

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkLivePage is what the page waits for as the user types: a
// one-slice plan with its bars, the scaling charts left for later.
func BenchmarkLivePage(b *testing.B) {
	h := New(Config{})
	for b.Loop() {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/?model=llama3-8b&tpu=tpu7x-8&seq=4096", nil)
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
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/?model=llama3-8b&tpu=tpu7x-8&seq=4096", nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET = %d", rec.Code)
		}
	}
}
