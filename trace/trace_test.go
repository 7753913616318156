package trace

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestWriterProducesValidJSON(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	w.Process(1, "chip 0")
	w.Track(1, 1, "MXU")
	w.Track(1, 1, "MXU") // named once
	w.Span(1, 1, "stream", "fold 0", 0, 10, map[string]any{"macs": 3})
	w.Counter(1, "active MACs", 5, map[string]any{"macs": 16})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b.String())
	}
	if len(doc.TraceEvents) != 4 {
		t.Errorf("%d events, want 4", len(doc.TraceEvents))
	}
	if doc.TraceEvents[2]["ph"] != "X" || doc.TraceEvents[2]["dur"] != 10.0 {
		t.Errorf("span = %v", doc.TraceEvents[2])
	}
}
