package web

import (
	"net/http"
	"strings"
	"testing"
)

// TestXPKMaxRestartsBound: the xpk download takes max_restarts from 0 to
// export's bound (1000), as export xpk --max-restarts does, and refuses
// more with a 400 naming the key; it wrote --max-restarts 2147483648,
// which JobSet's int32 maxRestarts cannot hold (review 2, item 2).
func TestXPKMaxRestartsBound(t *testing.T) {
	h := New(testConfig)
	q := "/download/xpk.sh?model=llama3-8b&tpu=v5p-8&max_restarts="
	for _, v := range []string{"1001", "5000", "2147483648", "99999999999", "-1", "three"} {
		code, body := get(t, h, q+v)
		if want := `max_restarts: "` + v + `", want a whole number from 0 to 1000`; code != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("GET %s = %d %.300s, want 400 with %q", q+v, code, body, want)
		}
	}
	for _, v := range []string{"0", "1000"} {
		if code, body := get(t, h, q+v); code != http.StatusOK || !strings.Contains(body, "--max-restarts "+v+" ") {
			t.Errorf("GET %s = %d %.300s, want 200 with --max-restarts %s", q+v, code, body, v)
		}
	}
}
