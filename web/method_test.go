package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestJSONEndpointsRefuseMethodsInJSON: a JSON address asked with a
// method it does not take answers 405 with its Allow header and the API's
// JSON error object, schema first, as every JSON answer; it answered
// text/plain "Method Not Allowed", which a JSON client cannot parse
// (review 2, item 9).
func TestJSONEndpointsRefuseMethodsInJSON(t *testing.T) {
	h := New(testConfig)
	for _, tc := range []struct{ method, target, allow string }{
		{http.MethodGet, "/api/plan", "POST"},
		{http.MethodPut, "/api/plan", "POST"},
		{http.MethodPost, "/api/catalog", "GET, HEAD"},
		{http.MethodPost, "/download/plan.json?model=llama3-8b", "GET, HEAD"},
		{http.MethodDelete, "/download/serving.json", "GET, HEAD"},
		{http.MethodPost, "/download/budget.json", "GET, HEAD"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, strings.NewReader("{}")))
		what := tc.method + " " + tc.target
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != tc.allow || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s = %d, Allow %q, Content-Type %q, want 405, %q, application/json", what, rec.Code, rec.Header().Get("Allow"), rec.Header().Get("Content-Type"), tc.allow)
		}
		if msg := errorOf(t, what, rec.Body.String()); !strings.Contains(msg, "method "+tc.method+", want "+strings.ReplaceAll(tc.allow, ", ", " or ")) {
			t.Errorf("%s: error %q does not name the method and the ones allowed", what, msg)
		}
	}
	// the page keeps the mux's plain answer: it is no JSON address
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST / = %d, want 405", rec.Code)
	}
}
