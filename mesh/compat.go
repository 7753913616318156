package mesh

// This file keeps package export compiling unchanged while its MaxText
// writer is rewritten on another branch. Delete it, and port export to
// Axis, Degree and Mesh.Degrees, when that rewrite lands.

// AxisName is the old name of Axis.
//
// Deprecated: use Axis.
type AxisName = Axis

// NamedDegree is Degree with its axis under the old field name.
//
// Deprecated: use Degree.
type NamedDegree struct {
	Name     Axis
	ICI, DCN int
}

// Axes returns every axis's degree in canonical order.
//
// Deprecated: use Degrees.
func (m Mesh) Axes() []NamedDegree {
	out := make([]NamedDegree, 0, NumAxes)
	for _, d := range m.degrees {
		out = append(out, NamedDegree{Name: d.Axis, ICI: d.ICI, DCN: d.DCN})
	}
	return out
}
