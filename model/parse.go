package model

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Parse reads a spec written in YAML or JSON (JSON is YAML). Unknown fields
// are errors, so a misspelt field is not silently ignored.
func Parse(data []byte) (Spec, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		if err == io.EOF {
			return Spec{}, fmt.Errorf("model: empty spec: %w; want fields name, layers, d_model, heads, d_ff, vocab, seq_len", ErrInvalid)
		}
		// a count the decoder cannot put in an int (1e30, .nan, 2^70) is
		// named by its field; yaml.v3 decodes the rest, the name included
		var doc yaml.Node
		var te *yaml.TypeError
		if errors.As(err, &te) && yaml.Unmarshal(data, &doc) == nil {
			if ferr := wholeNumbers(s.Name, &doc, intFields()); ferr != nil {
				return Spec{}, ferr
			}
			if ferr := unknownField(s.Name, te); ferr != nil {
				return Spec{}, ferr
			}
		}
		msg := strings.ReplaceAll(strings.ReplaceAll(err.Error(), ":\n  ", ": "), "\n  ", "; ")
		return Spec{}, fmt.Errorf("model: malformed spec: %s: %w", strings.TrimPrefix(msg, "yaml: "), ErrInvalid)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		return Spec{}, fmt.Errorf("model: spec holds more than one document: %w; want one", ErrInvalid)
	}
	if err := s.validateText(); err != nil {
		return Spec{}, err
	}
	// The decoder truncates 1.5 to 1 and reads 0x10, 0o10, 010 (as 8) and
	// 1_000 into an int: the counts are checked as written.
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Spec{}, fmt.Errorf("model: malformed spec: %s: %w", strings.TrimPrefix(err.Error(), "yaml: "), ErrInvalid)
	}
	if err := wholeNumbers(s.Name, &doc, intFields()); err != nil {
		return Spec{}, err
	}
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// decimal is a whole number as a count is written: decimal digits, an
// optional sign, no leading zero (YAML reads 010 as octal).
var decimal = regexp.MustCompile(`^[-+]?(0|[1-9][0-9]*)$`)

// intFields are the spec's integer fields by their YAML names.
func intFields() map[string]bool {
	ints := map[string]bool{}
	t := reflect.TypeFor[Spec]()
	for i := range t.NumField() {
		f := t.Field(i)
		switch f.Type.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			ints[name] = true
		}
	}
	return ints
}

// wholeNumbers checks that every integer field of the document n is
// written as a whole decimal number (or left null), through aliases and
// merge keys, each anchored node once (a document the decoder refused may
// alias itself).
func wholeNumbers(model string, n *yaml.Node, ints map[string]bool) error {
	if model == "" {
		model = "(unnamed)"
	}
	return numbersIn(model, n, ints, map[*yaml.Node]bool{})
}

// numbersIn is wholeNumbers' walk; seen holds the anchored nodes walked,
// which an alias does not walk again.
func numbersIn(model string, n *yaml.Node, ints map[string]bool, seen map[*yaml.Node]bool) error {
	if n == nil || seen[n] {
		return nil
	}
	if n.Anchor != "" {
		seen[n] = true
	}
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			if err := numbersIn(model, c, ints, seen); err != nil {
				return err
			}
		}
	case yaml.AliasNode:
		return numbersIn(model, n.Alias, ints, seen)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			for v.Kind == yaml.AliasNode && v.Alias != nil && v.Alias != v {
				v = v.Alias
			}
			switch {
			case k.Tag == "!!merge":
				if err := numbersIn(model, v, ints, seen); err != nil {
					return err
				}
			case ints[k.Value] && v.Kind == yaml.ScalarNode && v.Tag != "!!null" && !decimal.MatchString(v.Value):
				return &FieldError{Model: model, Field: k.Value, Value: strconv.QuoteToASCII(v.Value), Want: "a whole number in decimal digits"}
			case ints[k.Value] && v.Kind == yaml.ScalarNode && v.Tag != "!!null":
				if _, err := strconv.ParseInt(v.Value, 10, 64); err != nil {
					return &FieldError{Model: model, Field: k.Value, Value: strconv.QuoteToASCII(v.Value), Want: "a whole number in the field's range (every count is at most 2^24, a published parameter count at most 2^63-1)"}
				}
			}
		}
	}
	return nil
}

// YAML is the spec as the file Parse reads: its fields by their YAML
// names, those left at zero that mean a default left out.
func (s Spec) YAML() ([]byte, error) { return yaml.Marshal(s) }

// reUnknown is yaml.v3's error for a key KnownFields refuses.
var reUnknown = regexp.MustCompile(`^line (\d+): field (.+) not found in type model\.Spec$`)

// unknownField names the first key of te that is no spec field, and the
// fields a spec has; nil when te has none.
func unknownField(model string, te *yaml.TypeError) error {
	if model == "" {
		model = "(unnamed)"
	}
	for _, e := range te.Errors {
		if m := reUnknown.FindStringSubmatch(e); m != nil {
			return fmt.Errorf("model: %s: line %s: field %s is not a spec field, want one of %s: %w",
				model, m[1], strconv.QuoteToASCII(m[2]), strings.Join(specFields(), ", "), ErrInvalid)
		}
	}
	return nil
}

// specFields are the spec's fields by their YAML names, in its order.
func specFields() []string {
	var out []string
	t := reflect.TypeFor[Spec]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}
