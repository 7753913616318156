package mesh

import (
	"fmt"
	"strconv"
	"strings"
)

// Axis is a parallelism axis. The axes are small integers in the order
// shardlab prints them, so a table indexed by Axis (such as Coord) has one
// entry per axis; NumAxes counts them.
type Axis int

// The axes, in canonical order. Adding one is a row here and in axes below
// (plus its formulas in cost and emu); everything else iterates.
const (
	Data Axis = iota
	FSDP
	Tensor
	Pipeline
	Context
	Expert

	NumAxes = iota // the number of axes
)

// axisInfo is one row of the axis table.
type axisInfo struct {
	name string
	// place is the order in which ICI axes claim torus dimensions: axes
	// whose collectives sit on the critical path first.
	place int
	// overDCN is the error for a DCN factor above 1, nil where the axis may
	// cross slices.
	overDCN error
}

// axes is the axis table: the one place an axis's name and properties live.
var axes = [NumAxes]axisInfo{
	Data:     {name: "data", place: 4},
	FSDP:     {name: "fsdp", place: 3},
	Tensor:   {name: "tensor", place: 0, overDCN: ErrTensorOverDCN},
	Pipeline: {name: "pipeline", place: 5},
	Context:  {name: "context", place: 1, overDCN: ErrContextOverDCN},
	// Expert parallelism splits a mixture-of-experts layer's experts over
	// chips; its dispatch and combine all-to-alls are fine-grained, so it
	// claims torus dimensions right after tensor and context. It may cross
	// slices (MaxText's dcn_expert_parallelism), which the planner does
	// only with a reason.
	Expert: {name: "expert", place: 2},
}

// All returns every axis in canonical order.
func All() []Axis {
	out := make([]Axis, NumAxes)
	for i := range out {
		out[i] = Axis(i)
	}
	return out
}

// Valid reports whether a is one of the axes.
func (a Axis) Valid() bool { return a >= 0 && int(a) < NumAxes }

// String is the axis's name as Parse reads it ("data", "fsdp", …).
func (a Axis) String() string {
	if !a.Valid() {
		return "Axis(" + strconv.Itoa(int(a)) + ")"
	}
	return axes[a].name
}

// CrossesDCN reports whether the axis may have a DCN factor above 1.
func (a Axis) CrossesDCN() bool { return a.Valid() && axes[a].overDCN == nil }

// ParseAxis reads an axis name, ignoring case and surrounding space.
func ParseAxis(s string) (Axis, error) {
	n := strings.ToLower(strings.TrimSpace(s))
	for _, a := range All() {
		if axes[a].name == n {
			return a, nil
		}
	}
	return -1, &Error{Field: "axis", Value: strconv.Quote(s), Want: "one of " + axisList(), Err: ErrInvalid}
}

func axisList() string {
	names := make([]string, NumAxes)
	for i, a := range All() {
		names[i] = a.String()
	}
	return strings.Join(names, ", ")
}

// MarshalText writes the axis's name, so JSON carries "data", not 0.
func (a Axis) MarshalText() ([]byte, error) {
	if !a.Valid() {
		return nil, fmt.Errorf("mesh: axis %d, want 0 to %d", int(a), NumAxes-1)
	}
	return []byte(a.String()), nil
}

// UnmarshalText reads an axis's name (ParseAxis).
func (a *Axis) UnmarshalText(b []byte) error {
	x, err := ParseAxis(string(b))
	if err != nil {
		return err
	}
	*a = x
	return nil
}
