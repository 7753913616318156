package mesh

import (
	"fmt"
	"strconv"
	"strings"

	"shardlab/internal/enum"
)

// Axis is a parallelism axis. The axes are small integers in the order
// shardlab prints them, so a table indexed by Axis (such as Coord) has one
// entry per axis; NumAxes counts them.
type Axis int

// The axes, in canonical order. Adding one is a row here, in axisNames and
// in axes below (plus its formulas in cost and emu); everything else
// iterates.
const (
	Data Axis = iota
	FSDP
	Tensor
	Pipeline
	Context
	Expert

	NumAxes = iota // the number of axes
)

// axisNames is the one name table of the axes, as ParseAxis reads them.
var axisNames = enum.New[Axis]("Axis", []string{
	Data: "data", FSDP: "fsdp", Tensor: "tensor", Pipeline: "pipeline", Context: "context", Expert: "expert",
})

// axisInfo is one row of the axis table.
type axisInfo struct {
	// place is the order in which ICI axes claim torus dimensions: axes
	// whose collectives sit on the critical path first.
	place int
	// overDCN is the error for a DCN factor above 1, nil where the axis may
	// cross slices.
	overDCN error
}

// axes is the axis table: the one place an axis's properties live (its
// name is in axisNames).
var axes = [NumAxes]axisInfo{
	Data:     {place: 4},
	FSDP:     {place: 3},
	Tensor:   {place: 0, overDCN: ErrTensorOverDCN},
	Pipeline: {place: 5},
	Context:  {place: 1, overDCN: ErrContextOverDCN},
	// Expert parallelism splits a mixture-of-experts layer's experts over
	// chips; its dispatch and combine all-to-alls are fine-grained, so it
	// claims torus dimensions right after tensor and context. It may cross
	// slices (MaxText's dcn_expert_parallelism), which the planner does
	// only with a reason.
	Expert: {place: 2},
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
func (a Axis) Valid() bool { return axisNames.Valid(a) }

// String is the axis's name as Parse reads it ("data", "fsdp", …).
func (a Axis) String() string { return axisNames.String(a) }

// CrossesDCN reports whether the axis may have a DCN factor above 1.
func (a Axis) CrossesDCN() bool { return a.Valid() && axes[a].overDCN == nil }

// ParseAxis reads an axis name, ignoring case and surrounding space.
func ParseAxis(s string) (Axis, error) {
	if a, ok := axisNames.Lookup(strings.ToLower(strings.TrimSpace(s))); ok {
		return a, nil
	}
	return -1, &Error{Field: "axis", Value: strconv.Quote(s), Want: "one of " + axisList(), Err: ErrInvalid}
}

func axisList() string { return strings.Join(axisNames.List(), ", ") }

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
