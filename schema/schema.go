// Package schema owns the version of shardlab's JSON output: every JSON
// document a command prints with --json, and every one the web API serves,
// is an object whose first key is "schema", with the value Version.
//
// The version changes when a key is renamed or removed or changes its
// meaning or unit; adding a key keeps it. Units are in the key names
// (_bytes, _s, _fraction, _per_s, _tokens), and one quantity has one key
// in every command (hbm_capacity_bytes, accelerator_type, remat, ...).
package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Key is the name of the version's key, the first of every document.
const Key = "schema"

// Version is the schema every JSON document of this build follows.
const Version = "shardlab/v4"

// Marshal is v as compact JSON with Key: Version as its first key. v must
// encode as a JSON object; it is an error for it to hold Key already.
func Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(b) < 2 || b[0] != '{' {
		return nil, fmt.Errorf("schema: document of type %T is not a JSON object, want one", v)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return nil, err
	}
	if _, ok := keys[Key]; ok {
		return nil, fmt.Errorf("schema: document of type %T has its own %q key, want it to leave the key to schema", v, Key)
	}
	head, _ := json.Marshal(Key)
	val, _ := json.Marshal(Version)
	out := make([]byte, 0, len(b)+len(head)+len(val)+2)
	out = append(out, '{')
	out = append(out, head...)
	out = append(out, ':')
	out = append(out, val...)
	if len(keys) > 0 {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}

// Write writes v as indented JSON (two spaces, a final newline) with Key:
// Version as its first key; see Marshal.
func Write(w io.Writer, v any) error {
	b, err := Marshal(v)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}
