package schema_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"shardlab/schema"
)

func TestWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"struct", struct {
			A int    `json:"a_bytes"`
			B string `json:"b"`
		}{1, "x"}, "{\n  \"schema\": \"shardlab/v4\",\n  \"a_bytes\": 1,\n  \"b\": \"x\"\n}\n"},
		{"empty object", struct{}{}, "{\n  \"schema\": \"shardlab/v4\"\n}\n"},
		{"map", map[string][]int{"rows": {1, 2}}, "{\n  \"schema\": \"shardlab/v4\",\n  \"rows\": [\n    1,\n    2\n  ]\n}\n"},
	} {
		var b bytes.Buffer
		if err := schema.Write(&b, tc.v); err != nil {
			t.Fatalf("%s: Write: %v", tc.name, err)
		}
		if got := b.String(); got != tc.want {
			t.Errorf("%s: Write = %q, want %q", tc.name, got, tc.want)
		}
		// the same document as encoding/json's indented encoder, plus the key
		var m map[string]any
		if err := json.Unmarshal(b.Bytes(), &m); err != nil || m[schema.Key] != schema.Version {
			t.Errorf("%s: decoded %v (%v), want %s = %s", tc.name, m, err, schema.Key, schema.Version)
		}
	}
}

func TestWriteRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"array", []int{1}, "not a JSON object"},
		{"number", 3, "not a JSON object"},
		{"null", (*struct{})(nil), "not a JSON object"},
		{"own key", map[string]int{"schema": 2}, `own "schema" key`},
	} {
		err := schema.Write(new(bytes.Buffer), tc.v)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "schema: ") {
			t.Errorf("%s: Write error %v, want one starting schema: and saying %q", tc.name, err, tc.want)
		}
	}
}

func ExampleWrite() {
	var b bytes.Buffer
	schema.Write(&b, struct {
		HBM int64 `json:"hbm_capacity_bytes"`
	}{16 << 30})
	fmt.Print(b.String())
	// Output:
	// {
	//   "schema": "shardlab/v4",
	//   "hbm_capacity_bytes": 17179869184
	// }
}
