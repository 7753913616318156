package enum

import (
	"fmt"
	"slices"
	"testing"
)

type color int

const (
	red color = iota
	green
)

var colors = New[color]("color", []string{red: "red", green: "green"})

func TestNames(t *testing.T) {
	for _, c := range []struct {
		v     color
		want  string
		valid bool
	}{{red, "red", true}, {green, "green", true}, {2, "color(2)", false}, {-1, "color(-1)", false}} {
		if got := colors.String(c.v); got != c.want {
			t.Errorf("String(%d) = %q, want %q", int(c.v), got, c.want)
		}
		if got := colors.Valid(c.v); got != c.valid {
			t.Errorf("Valid(%d) = %v, want %v", int(c.v), got, c.valid)
		}
		if v, ok := colors.Lookup(c.want); ok != c.valid || ok && v != c.v {
			t.Errorf("Lookup(%q) = %d, %v, want %d, %v", c.want, int(v), ok, int(c.v), c.valid)
		}
	}
	if v, ok := colors.Lookup("Red"); ok {
		t.Errorf(`Lookup("Red") = %d, true, want no value: Lookup folds no case`, int(v))
	}
	if got, want := colors.List(), []string{"red", "green"}; !slices.Equal(got, want) {
		t.Errorf("List() = %q, want %q", got, want)
	}
}

// TestListIsACopy: a caller that changes the list changes no name.
func TestListIsACopy(t *testing.T) {
	l := colors.List()
	l[0] = "blue"
	if got := colors.String(red); got != "red" {
		t.Errorf("after changing List()[0], String(red) = %q, want red", got)
	}
}

// TestZero: the zero table names nothing and says what it was asked.
func TestZero(t *testing.T) {
	var n Names[color]
	if n.Valid(0) || n.String(0) != "(0)" || len(n.List()) != 0 {
		t.Errorf("zero Names: Valid(0) = %v, String(0) = %q, List() = %q; want false, \"(0)\", []", n.Valid(0), n.String(0), n.List())
	}
}

func ExampleNames() {
	type mode int
	modes := New[mode]("Mode", []string{0: "managed", 1: "all-capacity"})
	m, ok := modes.Lookup("all-capacity")
	fmt.Println(int(m), ok, modes.String(m), modes.String(7))
	// Output: 1 true all-capacity Mode(7)
}
