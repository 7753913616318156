package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"shardlab/web"
)

// A JSON request to POST /api/plan gets what shardlab plan --json prints;
// a request the server will not search gets a one-line error naming the
// option. Both start with the schema version, as every JSON document.
func ExampleNew() {
	h := web.New(web.Config{MaxChips: 1024})
	for _, body := range []string{`{"model": "llama3-8b", "tpu": "tpu7x-8"}`, `{"tpu": "v5p-8192"}`} {
		r := httptest.NewRequest(http.MethodPost, "/api/plan", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		keys := strings.SplitN(w.Body.String(), ",", 3)
		fmt.Println(w.Code, strings.Join(strings.Fields(keys[0]+","+keys[1]), " "))
	}
	// Output:
	// 200 { "schema": "shardlab/v4", "model": "llama3-8b"
	// 400 { "schema": "shardlab/v4", "error": "tpu: v5p-8192 (16x16x16
}
