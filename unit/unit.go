// Package unit holds the physical quantities shardlab computes with — bytes,
// FLOPs and their rates — as distinct types, so a bandwidth cannot be added to
// a capacity by accident. Values are formatted only when rendered.
package unit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bytes is a size in bytes.
type Bytes int64

// Common sizes.
const (
	KiB Bytes = 1 << 10
	MiB Bytes = 1 << 20
	GiB Bytes = 1 << 30
	TiB Bytes = 1 << 40
	GB  Bytes = 1e9
)

// String formats b with a binary prefix: "1.50 GiB".
func (b Bytes) String() string {
	return binary(float64(b), "B")
}

// GiB returns b in gibibytes.
func (b Bytes) GiB() float64 { return float64(b) / float64(GiB) }

// InGiB formats b in gibibytes to two decimals whatever its size, "0.50
// GiB", "1536.00 GiB": a table's column of sizes keeps one unit, where
// String chooses each value's prefix.
func (b Bytes) InGiB() string { return fmt.Sprintf("%.2f GiB", b.GiB()) }

// FLOPs is a count of floating-point operations.
type FLOPs float64

// String formats f with a decimal prefix: "1.20 PFLOP".
func (f FLOPs) String() string { return decimal(float64(f), "FLOP") }

// FLOPsPerSecond is a compute rate.
type FLOPsPerSecond float64

// String formats r with a decimal prefix: "459 TFLOP/s".
func (r FLOPsPerSecond) String() string { return decimal(float64(r), "FLOP/s") }

// BytesPerSecond is a bandwidth.
type BytesPerSecond float64

// String formats r with a decimal prefix: "25.0 GB/s".
func (r BytesPerSecond) String() string { return decimal(float64(r), "B/s") }

// BitsPerSecond converts a link rate quoted in bits per second (as network
// and DCN figures are published) into bytes per second.
func BitsPerSecond(bits float64) BytesPerSecond { return BytesPerSecond(bits / 8) }

// Bits returns r in bits per second.
func (r BytesPerSecond) Bits() float64 { return float64(r) * 8 }

func decimal(v float64, u string) string {
	v, p := scale(v, 1000, []string{"", "k", "M", "G", "T", "P", "E", "Z"})
	return fmt.Sprintf("%s %s%s", sig3(v), p, u)
}

func binary(v float64, u string) string {
	v, p := scale(v, 1024, []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"})
	if p == "" {
		return fmt.Sprintf("%d %s", int64(v), u)
	}
	return fmt.Sprintf("%s %s%s", sig3(v), p, u)
}

// scale divides v by base until its magnitude is under base or the
// prefixes run out, and returns it with the prefix it reached.
func scale(v, base float64, prefixes []string) (float64, string) {
	i := 0
	a := math.Abs(v)
	for a >= base && i < len(prefixes)-1 {
		a /= base
		v /= base
		i++
	}
	return v, prefixes[i]
}

// sig3 prints v with three significant digits (at least), no exponent.
func sig3(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// Seconds is a duration in seconds, for reports: every duration shardlab
// prints in text goes through its String, and JSON carries durations as
// float seconds in keys ending in _s.
type Seconds float64

// Hours is s in hours.
func (s Seconds) Hours() float64 { return float64(s) / 3600 }

// String formats s with three significant digits and the largest of s, ms,
// µs and ns that keeps the number at least 1: "14.8 s", "17.4 ms", "524 µs".
// Zero is "0 s"; durations of 1000 s and more stay in seconds ("3600 s").
func (s Seconds) String() string {
	v := float64(s)
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprintf("%g s", v)
	}
	// round to three significant digits first, so that 0.9996 s is "1 s",
	// not "1e+03 ms"
	r, _ := strconv.ParseFloat(fmt.Sprintf("%.3g", math.Abs(v)), 64)
	sign := ""
	if v < 0 {
		sign = "-"
	}
	switch {
	case r >= 1000:
		return fmt.Sprintf("%s%.0f s", sign, math.Abs(v))
	case r >= 1:
		return fmt.Sprintf("%s%.3g s", sign, r)
	case r >= 1e-3:
		return fmt.Sprintf("%s%.3g ms", sign, r*1e3)
	case r >= 1e-6:
		return fmt.Sprintf("%s%.3g µs", sign, r*1e6)
	}
	return fmt.Sprintf("%s%.3g ns", sign, r*1e9)
}

// Plural counts things in a report: Plural(1, "host") is "1 host",
// Plural(16, "host") is "16 hosts". Words ending in s, x, ch or sh take
// "es" ("2 micro-batches").
func Plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	for _, end := range []string{"s", "x", "ch", "sh"} {
		if strings.HasSuffix(word, end) {
			return fmt.Sprintf("%d %ses", n, word)
		}
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// Count writes n with commas between groups of three digits, as a report
// counts things: 3,672.
func Count(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
