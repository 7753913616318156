package validate

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The tables (memory.yaml, serving.yaml) are read strictly: yaml decodes
// them with unknown fields refused, and these check what it lets through
// and name the case and field of every complaint.

// numbers checks what yaml lets through when it decodes: a number that
// lands in an integer field must be written as a whole number (yaml
// truncates 1.5 to 1), and one that lands in a float field must be
// finite. t is the Go type n decodes into; path names the field.
func numbers(n *yaml.Node, t reflect.Type, path string) error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case n.Kind == yaml.ScalarNode && isInt(t.Kind()):
		if n.ShortTag() != "!!int" {
			return bad(path, n.Value, "a whole number")
		}
	case n.Kind == yaml.ScalarNode && (t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32):
		if v, err := strconv.ParseFloat(strings.TrimPrefix(n.Value, "+"), 64); n.ShortTag() == "!!float" && (err != nil || math.IsNaN(v) || math.IsInf(v, 0)) {
			return bad(path, n.Value, "a finite number")
		}
	case n.Kind == yaml.SequenceNode && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		for i, c := range n.Content {
			if err := numbers(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if k.Value == "<<" {
				ft, ok = t, true // a merge: its mapping holds this struct's fields
			}
			if !ok {
				continue // the decoder refuses unknown fields
			}
			p := path // a merge's fields are this struct's
			if k.Value != "<<" && path != "" {
				p = path + "." + k.Value
			} else if k.Value != "<<" {
				p = k.Value
			}
			if err := numbers(v, ft, p); err != nil {
				return err
			}
		}
	}
	return nil
}

func isInt(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// yamlFields maps a struct's yaml field names to their types, with the
// fields of inline structs.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case strings.Contains(opts, "inline"):
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
		case name == "":
			out[strings.ToLower(f.Name)] = f.Type
		default:
			out[name] = f.Type
		}
	}
	return out
}

// hexCommit is a git commit as the tables cite one.
var hexCommit = regexp.MustCompile(`^[0-9a-f]{7,40}$`)

// yamlLine is the line number that yaml's type errors start with.
var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// describeYAMLError names the field of each of a decoding error's
// complaints: yaml says only the line, so the line is looked up in the
// document's node tree.
func describeYAMLError(root *yaml.Node, err error) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	var msgs []string
	for _, e := range te.Errors {
		m := yamlLine.FindStringSubmatch(e)
		if m == nil {
			msgs = append(msgs, e)
			continue
		}
		line, _ := strconv.Atoi(m[1])
		what := m[2]
		if strings.Contains(what, " into int") {
			what += " (want a whole number)"
		}
		if f := fieldAt(root, line); f != "" {
			msgs = append(msgs, fmt.Sprintf("line %d: %s: %s", line, f, what))
		} else {
			msgs = append(msgs, e)
		}
	}
	return strings.Join(msgs, "; ")
}

// fieldAt names the field whose key or value sits on a line of a table
// ("case 3 (mt-52b-v4-384) model.d_model"), or "".
func fieldAt(root *yaml.Node, line int) string {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind != yaml.SequenceNode {
		return ""
	}
	for i, c := range n.Content {
		label := fmt.Sprintf("case %d%s", i+1, caseID(c))
		if c.Line == line && c.Kind != yaml.MappingNode {
			return label
		}
		if f := fieldPath(c, line, ""); f != "" {
			return label + " " + f
		}
	}
	return ""
}

// fieldPath is the dotted path of the field under n whose key or scalar
// value sits on the line, or "".
func fieldPath(n *yaml.Node, line int, path string) string {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if f := fieldPath(v, line, join(k.Value)); f != "" {
				return f // the deepest field on the line
			}
			if k.Line == line || v.Line == line {
				return join(k.Value)
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if c.Kind == yaml.ScalarNode && c.Line == line {
				return p
			}
			if f := fieldPath(c, line, p); f != "" {
				return f
			}
		}
	}
	return ""
}

// caseID is " (id)" for a case's mapping node that has one.
func caseID(n *yaml.Node) string {
	if n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "id" && n.Content[i+1].Kind == yaml.ScalarNode {
			return fmt.Sprintf(" (%s)", n.Content[i+1].Value)
		}
	}
	return ""
}

// table names a table for its errors: the memory table of cases, the
// serving table of rows.
type table struct{ name, row string }

// The tables parseTable reads.
var (
	runsTable    = table{name: "runs", row: "row"}
	memoryTable  = table{name: "memory", row: "case"}
	servingTable = table{name: "serving", row: "row"}
)

// rowError is the error for what is wrong with the row of an id.
func (t table) rowError(id string, err error) *RowError {
	return &RowError{Table: t.name, Row: t.row, ID: id, Err: err}
}

// RowError is a row of a table (a run, a memory case, a serving row) that is not
// valid: the table, what it calls a row, the row's id and what is wrong.
// It wraps ErrInvalid and the cause.
type RowError struct {
	Table, Row, ID string
	Err            error
}

func (e *RowError) Error() string {
	return fmt.Sprintf("validate: %s %s %s: %v", e.Table, e.Row, e.ID, e.Err)
}
func (e *RowError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

// parseTable reads a table (a YAML list of mappings) into rows of T:
// unknown fields, fractional numbers where whole ones belong, NaN and
// infinities are errors, each naming its row and field; every row has a
// unique id, a valid source (Cited) and passes its own check.
func parseTable[T any, P interface {
	*T
	cited() *Cited
	check() error
}](data []byte, t table) ([]T, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("validate: %s table: %s: %w", t.name, strings.ReplaceAll(err.Error(), "\n", "; "), ErrInvalid)
	}
	list := &root
	if list.Kind == yaml.DocumentNode && len(list.Content) == 1 {
		list = list.Content[0]
	}
	switch {
	case root.Kind == 0 || list.Kind == yaml.SequenceNode && len(list.Content) == 0:
		return nil, fmt.Errorf("validate: %s table has no %ss, want a list of %ss: %w", t.name, t.row, t.row, ErrInvalid)
	case list.Kind != yaml.SequenceNode:
		return nil, fmt.Errorf("validate: %s table (line %d) is not a list, want a list of %ss: %w", t.name, list.Line, t.row, ErrInvalid)
	}
	for i, n := range list.Content {
		if n.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("validate: %s %s %d (line %d) is not a mapping of fields, want one: %w", t.name, t.row, i+1, n.Line, ErrInvalid)
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var rows []T
	if err := dec.Decode(&rows); err != nil {
		return nil, fmt.Errorf("validate: %s table: %s: %w", t.name, describeYAMLError(&root, err), ErrInvalid)
	}
	seen := map[string]bool{}
	for i := range rows {
		r := P(&rows[i])
		c := r.cited()
		if strings.TrimSpace(c.ID) == "" || strings.ContainsAny(c.ID, " \t\n") || seen[c.ID] {
			return nil, fmt.Errorf("validate: %s %s %d: id = %q, want a unique id without spaces: %w", t.name, t.row, i+1, c.ID, ErrInvalid)
		}
		seen[c.ID] = true
		if i < len(list.Content) {
			if err := numbers(list.Content[i], reflect.TypeFor[T](), ""); err != nil {
				return nil, t.rowError(c.ID, err)
			}
		}
		if err := c.Source.check(); err != nil {
			return nil, t.rowError(c.ID, err)
		}
		if err := r.check(); err != nil {
			return nil, t.rowError(c.ID, err)
		}
	}
	return rows, nil
}
