package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"shardlab/inference"
	"shardlab/plan"
	"shardlab/schema"
)

// errorJSON is what plan, budget and the like write on stdout with --json
// when the job cannot run (exit 1), as the web API answers such an error
// in JSON: the error line run prints on stderr, and the changes under
// which the job would run (plan.NoPlanError's fixes, options spelt as
// flags), empty when the error carries none. A usage error (exit 2) stays
// text on stderr only.
type errorJSON struct {
	Error string   `json:"error"`
	Fixes []string `json:"fixes"`
}

// failJSON writes err as errorJSON on w when it says the job cannot run,
// and returns err for run to print and exit with; a usage error or nil
// it returns as it is.
func failJSON(w io.Writer, err error) error {
	if err == nil || isUsage(err) {
		return err
	}
	if werr := writeJSON(w, errorDoc(err)); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// failJSONDoc writes doc, a document as writeJSON writes it, with err's
// errorJSON keys after its schema, and returns err: a command whose
// result is written though the job cannot run (budget's table without a
// row) says why in the one document.
func failJSONDoc(w io.Writer, doc []byte, err error) error {
	var c bytes.Buffer
	if cerr := json.Compact(&c, doc); cerr != nil {
		return errors.Join(err, cerr)
	}
	head, _ := json.Marshal(map[string]string{schema.Key: schema.Version})
	rest, ok := bytes.CutPrefix(c.Bytes(), head[:len(head)-1])
	e, merr := json.Marshal(errorDoc(err))
	if !ok || merr != nil {
		return errors.Join(err, fmt.Errorf("a document that does not start with its schema, or %v", merr))
	}
	merged := append(e[:len(e)-1:len(e)-1], rest...)
	if werr := writeJSON(w, json.RawMessage(merged)); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// errorDoc is err as errorJSON.
func errorDoc(err error) errorJSON {
	doc := errorJSON{Error: clipLine(oneLine(err.Error())), Fixes: []string{}}
	var none *plan.NoPlanError
	var unfit *inference.NoFitError
	switch {
	case errors.As(err, &none):
		doc.Fixes = none.FixTexts(flagName)
	case errors.As(err, &unfit):
		doc.Fixes = unfit.FixTexts(fieldFlag)
	}
	return doc
}
