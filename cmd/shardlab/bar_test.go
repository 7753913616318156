package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestBarDrawsOnlyOnTerminals(t *testing.T) {
	var buf bytes.Buffer
	b := newBar(&buf, 4)
	b.tick("sweep")
	b.done()
	if buf.Len() != 0 {
		t.Errorf("a bar on a buffer drew %q", buf.String())
	}
	b = &bar{w: &buf, n: 4, on: true}
	for range 3 {
		b.tick("sweep")
	}
	if got := buf.String(); !strings.HasSuffix(got, "\rsweep [===============               ] 3/4") {
		t.Errorf("bar after 3 of 4 ticks: %q", got)
	}
}
