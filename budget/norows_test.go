package budget

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"shardlab/plan"
)

// TestErrIsTheOneRule: a result has an error exactly when its table has
// no row (review 152 #8: the web's download answered 200 where the command
// exits 1, since the rule lived in the command), of the kind its limits
// say, phrased as the result is; its JSON leads with that error and an
// empty fixes list, and a result with rows carries neither key.
func TestErrIsTheOneRule(t *testing.T) {
	row := Row{Slices: 1, AcceleratorType: "v6e-16", Mode: OnDemand, TimeToTrainS: 86400, USD: 100}
	timed := Timed{Slices: 1, AcceleratorType: "tpu7x-32", Modes: []Mode{OnDemand}, TimeToTrainS: 3600, MeetsDeadline: true}
	flag := func(o plan.Option) string { return "--" + string(o) }
	for _, tt := range []struct {
		name string
		res  Result
		want string // "" for no error
	}{
		{"a row", Result{Rows: []Row{row}, Deadline: 1}, ""},
		{"nothing priced", Result{}, "budget: no configuration is both priced and able to run the job: see unpriced and dropped"},
		{"over the deadline", Result{Deadline: 3600, Nearest: "1 × v6e-16 on-demand: 24h, $100"},
			"budget: no priced configuration meets the limits; nearest: 1 × v6e-16 on-demand: 24h, $100"},
		{"over the budget, nothing was over it", Result{Budget: 5}, "budget: no priced configuration meets the limits"},
		{"an unpriced one meets it", Result{Deadline: 7200, Timed: []Timed{timed}},
			"budget: no priced configuration meets the limits; without a price, 1 × tpu7x-32 on-demand meets the deadline: give its price with a price of your own (a price, or a price table) to rank it"},
		{"phrased", Result{Deadline: 7200, Timed: []Timed{timed}}.Phrase("plan", flag),
			"budget: no priced configuration meets the limits; without a price, 1 × tpu7x-32 on-demand meets the deadline: give its price with --price or --prices to rank it"},
	} {
		err := tt.res.Err()
		var nr *NoRowsError
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: Err = %v, want nil", tt.name, err)
			}
		} else if !errors.As(err, &nr) || err.Error() != tt.want {
			t.Errorf("%s: Err = %v, want a *NoRowsError %q", tt.name, err, tt.want)
		}
		var b bytes.Buffer
		if err := tt.res.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		var got string
		json.Unmarshal(doc["error"], &got)
		if _, hasFixes := doc["fixes"]; got != tt.want || hasFixes != (tt.want != "") || (tt.want != "" && string(doc["fixes"]) != "[]") {
			t.Errorf("%s: JSON error %q, fixes %s, want %q and [] with it", tt.name, got, doc["fixes"], tt.want)
		}
		if tt.want != "" && !strings.HasPrefix(b.String(), "{\n  \"schema\": \"shardlab/v4\",\n  \"error\": ") {
			t.Errorf("%s: JSON starts %.80q, want the schema, then the error", tt.name, b.String())
		}
	}
}
