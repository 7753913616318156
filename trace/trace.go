// Package trace writes Chrome trace-event JSON, which Perfetto
// (ui.perfetto.dev) and chrome://tracing open: spans on named tracks and
// counters over time. Simulators, the pipeline schedule and the emulator
// share it.
package trace

import (
	"encoding/json"
	"io"
)

// Writer streams trace events to an io.Writer. Call Close to finish the
// JSON document. Timestamps are in microseconds of the trace's own clock.
type Writer struct {
	w     io.Writer
	n     int
	err   error
	names map[[2]int]bool
}

// NewWriter starts a trace document on w.
func NewWriter(w io.Writer) *Writer {
	t := &Writer{w: w, names: map[[2]int]bool{}}
	t.write([]byte(`{"displayTimeUnit":"ns","traceEvents":[`))
	return t
}

type event struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	TS   float64        `json:"ts"`
	Dur  float64        `json:"dur,omitempty"`
	PID  int            `json:"pid"`
	TID  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

func (t *Writer) write(b []byte) {
	if t.err != nil {
		return
	}
	_, t.err = t.w.Write(b)
}

func (t *Writer) emit(e event) {
	b, err := json.Marshal(e)
	if err != nil {
		t.err = err
		return
	}
	if t.n > 0 {
		t.write([]byte(",\n"))
	} else {
		t.write([]byte("\n"))
	}
	t.n++
	t.write(b)
}

// Track names a track (thread) of a process; call it once per track.
func (t *Writer) Track(pid, tid int, name string) {
	if t.names[[2]int{pid, tid}] {
		return
	}
	t.names[[2]int{pid, tid}] = true
	t.emit(event{Name: "thread_name", Ph: "M", PID: pid, TID: tid, Args: map[string]any{"name": name}})
}

// Process names a process.
func (t *Writer) Process(pid int, name string) {
	t.emit(event{Name: "process_name", Ph: "M", PID: pid, Args: map[string]any{"name": name}})
}

// Span records a complete event of dur starting at start.
func (t *Writer) Span(pid, tid int, name, cat string, start, dur float64, args map[string]any) {
	t.emit(event{Name: name, Cat: cat, Ph: "X", TS: start, Dur: dur, PID: pid, TID: tid, Args: args})
}

// Counter records counter values at ts.
func (t *Writer) Counter(pid int, name string, ts float64, values map[string]any) {
	t.emit(event{Name: name, Ph: "C", TS: ts, PID: pid, Args: values})
}

// Close ends the document and reports the first write error.
func (t *Writer) Close() error {
	t.write([]byte("\n]}\n"))
	return t.err
}
