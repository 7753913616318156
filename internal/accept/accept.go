// Package accept words the values a numeric option accepts, as every
// front end states them when it refuses one: the command line's flags
// (in their errors and -h) and the web forms. The option's owner gives
// the range (inference.Accepted for the serving options); this package
// alone words it, so that the two front ends say the same.
//
// A usage text names its placeholder in back quotes ("a whole `number`
// from 1 to 10"), as the flag package's -h takes it (flag.UnquoteUsage);
// Want is the same without them, with the note after it, as errors
// give it. A note may name other options as {key} (internal/braces),
// which each front end spells.
package accept

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Range is an accepted range as errors word it.
type Range interface {
	Want() string
}

// Whole is the whole numbers from Lo to Hi; Note says what values inside
// the range mean ("0: search").
type Whole[T int | int64 | uint64] struct {
	Lo, Hi T
	Note   string
}

// Usage is the range for -h, without the note.
func (w Whole[T]) Usage() string { return fmt.Sprintf("a whole `number` from %d to %d", w.Lo, w.Hi) }

// Want is the range for errors: "a whole number from 0 to 10 (0: the
// default)".
func (w Whole[T]) Want() string { return WithNote(w.Usage(), w.Note) }

// Decimal is the finite numbers from Lo to Hi, either end open, and 0
// where Zero says what 0 means outside the range; Unit follows the
// range.
type Decimal struct {
	Lo, Hi         float64
	LoOpen, HiOpen bool
	Zero, Unit     string
}

// Usage is the range for -h: "a finite `number` in (0, 1]".
func (d Decimal) Usage() string {
	l, r := "[", "]"
	if d.LoOpen {
		l = "("
	}
	if d.HiOpen {
		r = ")"
	}
	s := fmt.Sprintf("a finite `number` in %s%g, %g%s", l, d.Lo, d.Hi, r)
	if d.Unit != "" {
		s += " " + d.Unit
	}
	if d.Zero != "" {
		s += ", or 0 for " + d.Zero
	}
	return s
}

// Want is the range for errors: Usage without back quotes.
func (d Decimal) Want() string { return WithNote(d.Usage(), "") }

// Contains reports whether d accepts v: finite, in the range or 0 where
// Zero allows it.
func (d Decimal) Contains(v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	if v == 0 && d.Zero != "" {
		return true
	}
	above := v > d.Lo || (!d.LoOpen && v == d.Lo)
	below := v < d.Hi || (!d.HiOpen && v == d.Hi)
	return above && below
}

// Duration is the durations from Lo to Hi; Note says what values inside
// the range mean ("0: no target").
type Duration struct {
	Lo, Hi time.Duration
	Note   string
}

// Usage is the range for -h, without the note.
func (d Duration) Usage() string { return fmt.Sprintf("a `duration` from %v to %v", d.Lo, d.Hi) }

// Want is the range for errors: "a duration from 0s to 1h0m0s (0: no
// target)".
func (d Duration) Want() string { return WithNote(d.Usage(), d.Note) }

// WithNote is usage for errors, without back quotes, with note in
// parentheses after it where there is one.
func WithNote(usage, note string) string {
	s := strings.ReplaceAll(usage, "`", "")
	if note != "" {
		s += " (" + note + ")"
	}
	return s
}

// UsageNote is usage for -h, with note: " (a whole `number` from 0 to
// 10; 0: the default)".
func UsageNote(usage, note string) string {
	if note != "" {
		usage += "; " + note
	}
	return " (" + usage + ")"
}
