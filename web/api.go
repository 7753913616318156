package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"

	"shardlab/hw"
	"shardlab/model"
	"shardlab/plan"
	"shardlab/schema"
)

// apiRequest is the body of POST /api/plan: plan's options by their JSON
// keys, over plan.DefaultOptions, with the model and a pasted spec apart
// (each nil when left out), which modelKeys.pick chooses from as the
// query's addresses do.
type apiRequest struct {
	plan.Options
	Model     *string `json:"model"`
	ModelSpec *string `json:"model_spec"`
}

// apiError is the body of an API error: every mistake found, joined in
// Error, and each with its option in Errors; Option is the first's.
// Fixes are, for a job that cannot run, the changes under which it
// would, as shardlab's --json error document lists them (fixesOf), empty
// for any other error.
type apiError struct {
	Error  string          `json:"error"`
	Fixes  []string        `json:"fixes"`
	Option string          `json:"option,omitempty"`
	Errors []apiFieldError `json:"errors"`
}

// apiFieldError is one mistake of a request and the option (JSON key) it
// concerns, left out for none.
type apiFieldError struct {
	Option string `json:"option,omitempty"`
	Error  string `json:"error"`
}

// apiKey spells an option as the API does: its JSON key.
func apiKey(o plan.Option) string { return string(o) }

// writeErrorJSON writes err as the API's JSON error object: its status
// and errors (status) and its fixes (fixesOf), options spelt as JSON keys.
func (h *Handler) writeErrorJSON(w http.ResponseWriter, err error) {
	code, fes := h.status(err)
	h.writeAPIDoc(w, code, fes, fixesOf(err, apiKey))
}

// writeAPIError writes errors with options spelt as JSON keys, and no
// fixes.
func (h *Handler) writeAPIError(w http.ResponseWriter, code int, fes fieldErrors) {
	h.writeAPIDoc(w, code, fes, []string{})
}

// writeAPIDoc writes the API's JSON error object of errors fes, with
// their fixes.
func (h *Handler) writeAPIDoc(w http.ResponseWriter, code int, fes fieldErrors, fixes []string) {
	w.Header().Set("Content-Type", "application/json")
	h.setRetry(w, code)
	w.WriteHeader(code)
	key := apiKey
	e := apiError{Error: fes.Phrase(key), Fixes: fixes, Errors: []apiFieldError{}}
	for _, fe := range fes {
		e.Errors = append(e.Errors, apiFieldError{Option: string(fe.Option), Error: fe.Phrase(key)})
	}
	if len(fes) > 0 {
		e.Option = string(fes[0].Option)
	}
	writeJSON(w, e)
}

// jsonRoute serves fn at path, a JSON address, for method (GET takes
// HEAD too, as the mux's patterns do); any other method gets the API's
// JSON error object with 405 and the Allow header, where the mux would
// answer text/plain.
func (h *Handler) jsonRoute(method, path string, fn http.HandlerFunc) {
	h.mux.HandleFunc(method+" "+path, fn)
	allow := []string{method}
	if method == http.MethodGet {
		allow = append(allow, http.MethodHead)
	}
	h.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		h.writeAPIError(w, http.StatusMethodNotAllowed, fieldErrors{plain("method %s, want %s", r.Method, strings.Join(allow, " or "))})
	})
}

// writeJSON writes v, a JSON object, with its schema version first, as
// every JSON document shardlab prints.
func writeJSON(w io.Writer, v any) error { return schema.Write(w, v) }

// serveAPIPlan plans a JSON request and writes what shardlab plan --json
// prints for it.
func (h *Handler) serveAPIPlan(w http.ResponseWriter, r *http.Request) {
	if fe := checkMediaType(r.Header); fe != nil {
		h.writeAPIError(w, http.StatusUnsupportedMediaType, fieldErrors{fe})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		h.writeAPIError(w, http.StatusRequestEntityTooLarge, fieldErrors{plain("body larger than %d bytes", h.cfg.MaxBodyBytes)})
		return
	case err != nil:
		h.writeAPIError(w, http.StatusBadRequest, fieldErrors{plain("reading the body: %v", err)})
		return
	}
	req := apiRequest{Options: plan.DefaultOptions()}
	bad, malformed := decodeAPI(body, &req)
	if malformed != nil {
		h.writeAPIError(w, http.StatusBadRequest, fieldErrors{malformed})
		return
	}
	o := req.Options
	var keys modelKeys
	if req.Model != nil {
		keys.model, keys.hasModel = *req.Model, true
	}
	if req.ModelSpec != nil {
		keys.spec, keys.hasSpec = *req.ModelSpec, true
	}
	var fe *fieldError
	if o.Model, o.ModelSpec, fe = keys.pick(h.cfg, plan.DefaultModel); fe != nil {
		bad = append(bad, fe)
	}
	out, err := h.run(r.Context(), o, bad, false)
	if err != nil {
		h.writeErrorJSON(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(planStatus(out.plan))
	out.plan.WriteJSON(w, plan.Option.Flag)
}

// planStatus is the status of an answer that is plan p: 422 where its
// layout does not fit (a layout the request fixed: the search offers
// only layouts that fit), as shardlab plan --json prints the plan and
// exits 1, and as the MaxText and xpk downloads of it answer 422; else
// 200.
func planStatus(p plan.Plan) int {
	if !p.Best.Estimate.Memory.Fits() {
		return http.StatusUnprocessableEntity
	}
	return http.StatusOK
}

// checkMediaType accepts one Content-Type, application/json, whose type,
// subtype and parameter names match in any case (RFC 9110 section 8.3.1)
// and whose only parameter, if any, is charset=utf-8 in any case: JSON
// exchanged between systems is UTF-8 (RFC 8259 section 8.1), so a body
// in another charset is refused rather than read as UTF-8.
func checkMediaType(hd http.Header) *fieldError {
	cts := hd.Values("Content-Type")
	if len(cts) != 1 {
		return plain("%d Content-Type headers, want one: application/json", len(cts))
	}
	ct := cts[0]
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return plain("content type %q, want application/json", ct)
	}
	for k, v := range params {
		if k != "charset" {
			return plain("content type %q: parameter %q, want none but charset=utf-8", ct, k)
		}
		if !strings.EqualFold(v, "utf-8") {
			return plain("content type %q: charset %q, want utf-8 (JSON is UTF-8, RFC 8259)", ct, v)
		}
	}
	return nil
}

// apiKeys are the JSON keys of apiRequest, each with the type of its
// field, which a body must spell exactly: encoding/json alone matches keys
// in any case, so "Model" would set model past DisallowUnknownFields.
var apiKeys = jsonKeys(reflect.TypeFor[apiRequest]())

// jsonKeys are the keys encoding/json decodes into struct type t, with
// those of its embedded structs, each with the type of its field.
func jsonKeys(t reflect.Type) map[string]reflect.Type {
	keys := map[string]reflect.Type{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported() && !f.Anonymous:
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			maps.Copy(keys, jsonKeys(f.Type))
		case name == "":
			keys[f.Name] = f.Type
		default:
			keys[name] = f.Type
		}
	}
	return keys
}

// decodeAPI reads body into req: one UTF-8 JSON object, nothing after it,
// whose keys are apiKeys spelt exactly, each at most once. A body that is
// not such an object is malformed (one error); a value of the wrong type,
// or null (which encoding/json would take as "leave the default"), is an
// error about its key, among bad (every such key), and leaves its field as
// it was, so that the others can be checked.
func decodeAPI(body []byte, req *apiRequest) (bad fieldErrors, malformed *fieldError) {
	keys, values, malformed := readAPIObject(body)
	if malformed != nil {
		return nil, malformed
	}
	// the keys are checked: decode each value into its field, so that
	// every value of the wrong type is found
	for _, key := range keys {
		if string(bytes.TrimSpace(values[key])) == "null" {
			bad = append(bad, textOf(plan.Option(key), "null, want %s; leave %q out for its default", wantOf(apiKeys[key]), key))
			continue
		}
		var text string
		if json.Unmarshal(values[key], &text) == nil {
			if fe := notText(plan.Option(key), text); fe != nil {
				bad = append(bad, fe)
				continue
			}
		}
		one, err := json.Marshal(map[string]json.RawMessage{key: values[key]})
		if err != nil {
			return nil, jsonError(err)
		}
		dec := json.NewDecoder(bytes.NewReader(one))
		dec.DisallowUnknownFields()
		if err := dec.Decode(req); err != nil {
			fe := jsonError(err)
			if past := pastRange(key, values[key]); past != nil {
				fe = past
			}
			if fe.Option == "" {
				return nil, fe
			}
			bad = append(bad, fe)
		}
	}
	return bad, nil
}

// pastRange is the error for raw, a whole number too large for the
// integer field of plan.Options that key names, in the words of plan's
// own range check (its refusal of the nearest value the field holds,
// with raw for that value); nil when raw is no whole number, or plan
// takes the nearest value or refuses it for another option.
func pastRange(key string, raw json.RawMessage) *fieldError {
	f, _, err := big.ParseFloat(string(bytes.TrimSpace(raw)), 10, 256, big.ToNearestEven)
	idx, ok := planForm.index[plan.Option(key)]
	if err != nil || !f.IsInt() || !ok {
		return nil
	}
	o := plan.DefaultOptions()
	fv := reflect.ValueOf(&o).Elem().FieldByIndex(idx)
	if fv.Kind() != reflect.Int && fv.Kind() != reflect.Int64 {
		return nil
	}
	nearest := int64(math.MaxInt64)
	if f.Sign() < 0 {
		nearest = math.MinInt64
	}
	fv.SetInt(nearest)
	_, err = plan.ParseRequest(o)
	var pe *plan.OptionError
	if !errors.As(err, &pe) || pe.Option != plan.Option(key) || pe.Value == "" {
		return nil
	}
	text := string(bytes.TrimSpace(raw))
	return &fieldError{pe.Option, func(name func(plan.Option) string) string {
		return strings.Replace(pe.Phrase(name), pe.Value, text, 1)
	}}
}

// utf8BOM is U+FEFF in UTF-8, the byte-order mark.
const utf8BOM = "\uFEFF"

// readAPIObject reads body as one JSON object whose keys are the API's,
// each at most once, and returns the keys in order with their values.
func readAPIObject(body []byte) ([]string, map[string]json.RawMessage, *fieldError) {
	fail := func(format string, a ...any) ([]string, map[string]json.RawMessage, *fieldError) {
		return nil, nil, plain("malformed request: "+format, a...)
	}
	if !utf8.Valid(body) {
		return fail("the body is not UTF-8")
	}
	if bytes.HasPrefix(body, []byte(utf8BOM)) {
		// RFC 8259 section 8.1: senders "MUST NOT add a byte order mark";
		// a reader MAY ignore one. Refused, as every other body that is
		// not plain JSON is, and named, not read as the byte 0xEF.
		return fail("the body starts with a byte-order mark (U+FEFF), want UTF-8 JSON without one")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	switch tok, err := dec.Token(); {
	case err == io.EOF:
		return fail("empty body, want a JSON object")
	case err != nil:
		return nil, nil, jsonError(err)
	case tok != json.Delim('{'):
		return fail("%s, want a JSON object", jsonKind(tok))
	}
	seen := map[string]bool{}
	var keys []string
	values := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, jsonError(err)
		}
		key := tok.(string) // an object's keys are strings, or Token fails
		if fe := checkAPIKey(key, seen); fe != nil {
			return nil, nil, fe
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, jsonError(err)
		}
		keys, values[key] = append(keys, key), v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, nil, jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail("data after the JSON object, want one object")
	}
	return keys, values, nil
}

// checkAPIKey refuses a key the API does not have (naming the one it
// misses by case), or one already seen.
func checkAPIKey(key string, seen map[string]bool) *fieldError {
	if _, ok := apiKeys[key]; !ok {
		for k := range apiKeys {
			if strings.EqualFold(k, key) {
				return &fieldError{plan.Option(k), func(func(plan.Option) string) string {
					return fmt.Sprintf("malformed request: unknown field %q; keys are case-sensitive, want %q", key, k)
				}}
			}
		}
		return plain("malformed request: unknown field %q", key)
	}
	if seen[key] {
		return &fieldError{plan.Option(key), func(func(plan.Option) string) string {
			return fmt.Sprintf("malformed request: field %q given twice, want it once", key)
		}}
	}
	return nil
}

// jsonKind names the JSON value that tok starts.
func jsonKind(tok json.Token) string {
	switch tok.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case string:
		return "a string"
	case json.Delim:
		return "an array"
	}
	return fmt.Sprintf("%v", tok)
}

// jsonError is a decoding error in a line, without Go's type names, naming
// the field it concerns.
func jsonError(err error) *fieldError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := wantOf(te.Type)
		field := strings.TrimPrefix(te.Field, "Options.")
		return &fieldError{plan.Option(field), func(func(plan.Option) string) string {
			return fmt.Sprintf("malformed request: field %q: want %s", field, want)
		}}
	}
	if err == io.ErrUnexpectedEOF {
		return plain("malformed request: the body ends inside the JSON object")
	}
	return plain("malformed request: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// wantOf is the JSON value a field of type t takes, in words.
func wantOf(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	want := map[reflect.Kind]string{reflect.Int: "a whole number", reflect.Int64: "a whole number (nanoseconds)", reflect.Float64: "a number",
		reflect.String: "a string", reflect.Bool: "true or false"}[t.Kind()]
	if want == "" {
		want = "a " + t.Kind().String()
	}
	return want
}

// catalog is the body of GET /api/catalog.
type catalog struct {
	Models []model.Summary `json:"models"`
	TPUs   []catalogTPU    `json:"tpus"`
}

type catalogTPU struct {
	Generation       string   `json:"generation"`
	Name             string   `json:"name"`
	AcceleratorTypes []string `json:"accelerator_types"`
}

func serveCatalog(w http.ResponseWriter, r *http.Request) {
	var c catalog
	for _, s := range model.Catalog() {
		c.Models = append(c.Models, s.Summarize())
	}
	for _, chip := range hw.Chips() {
		c.TPUs = append(c.TPUs, catalogTPU{Generation: string(chip.Generation), Name: chip.Name, AcceleratorTypes: chip.AcceleratorTypes()})
	}
	w.Header().Set("Content-Type", "application/json")
	writeJSON(w, c)
}
