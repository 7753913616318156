package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// bar is a progress bar for long work, drawn on stderr only when it is a
// terminal, so pipes, files and tests see nothing of it.
type bar struct {
	w    io.Writer
	n, i int
	on   bool
}

func newBar(w io.Writer, n int) *bar { return &bar{w: w, n: n, on: isTerminal(w)} }

// tick marks the start of the next of n pieces of work.
func (b *bar) tick(what string) {
	b.i++
	if !b.on {
		return
	}
	const width = 30
	done := (b.i - 1) * width / max(b.n, 1)
	fmt.Fprintf(b.w, "\r%s [%s%s] %d/%d", what, strings.Repeat("=", done), strings.Repeat(" ", width-done), b.i, b.n)
}

// done clears the bar.
func (b *bar) done() {
	if b.on {
		fmt.Fprintf(b.w, "\r%s\r", strings.Repeat(" ", 60))
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
