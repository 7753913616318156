// Package enum names the values of a small integer type: one table,
// indexed by the value, that the type's String, MarshalText and parser all
// read, so that each name is written once, beside its constant: mesh.Axis,
// hw.NameCount and hw.Tier, capacity.Mode and collective.Op keep their names
// in one.
package enum

import "strconv"

// Names is the name table of an integer type T whose values are 0, 1, …
// in the order of its constants. The zero Names names no value.
type Names[T ~int] struct {
	typ   string
	names []string
}

// New returns the table of the type called typ, which String shows for a
// value without a name ("Mode(7)"). names[v] is v's name, so a keyed
// literal, []string{Managed: "managed", AllCapacity: "all-capacity"},
// keeps each name beside its constant.
func New[T ~int](typ string, names []string) Names[T] {
	return Names[T]{typ: typ, names: append([]string(nil), names...)}
}

// Valid reports whether v has a name.
func (n Names[T]) Valid(v T) bool { return v >= 0 && int(v) < len(n.names) }

// String is v's name, or the type and the number, "Mode(7)", for a value
// without one.
func (n Names[T]) String(v T) string {
	if !n.Valid(v) {
		return n.typ + "(" + strconv.Itoa(int(v)) + ")"
	}
	return n.names[v]
}

// Lookup returns the value named s, as written (no folding of case or
// space: that is the caller's dialect), or -1 and false.
func (n Names[T]) Lookup(s string) (T, bool) {
	for i, name := range n.names {
		if name == s {
			return T(i), true
		}
	}
	return -1, false
}

// List returns the names in the order of their values, in a new slice.
func (n Names[T]) List() []string { return append([]string(nil), n.names...) }
