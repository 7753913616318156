package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"shardlab/budget"
	"shardlab/export"
	"shardlab/plan"
	"shardlab/schema"
)

// serveMaxText plans the query and downloads the chosen layout as a
// MaxText config (MaxText's best where MaxText cannot run it, download).
func (h *Handler) serveMaxText(w http.ResponseWriter, r *http.Request) {
	// MaxText reads a config file only by a name ending in .yml.
	fileName := func(p plan.Plan) string {
		if cfg, err := export.MaxText(p); err == nil {
			return cfg.File()
		}
		return "shardlab.yml"
	}
	h.download(w, r, true, nil, nil, fileName, "application/yaml", func(w io.Writer, p plan.Plan, held *export.Held) error {
		if mem := p.Best.Estimate.Memory; !mem.Fits() {
			return errUnfit{mem.Shortfall()}
		}
		cfg, err := export.MaxTextOf(p, held)
		if err != nil {
			return err
		}
		return cfg.WriteYAML(w)
	})
}

// heldView says which layout the page's MaxText and xpk downloads hold
// when it is not the layout the page shows. Where MaxText cannot run the
// shown layout (a 1F1B or interleaved pipeline: maxtext issue #752) they
// hold MaxText's best (export.MaxTextHeld), another layout, and a comment
// under their title says so: J is its plan, as the page shows
// plans, and Why says why the shown layout is not it. Where MaxText runs
// no layout of the job, J is nil and None says why there is no download.
type heldView struct {
	J         *plan.JSON
	Why, None string
}

// maxTextHeld is the heldView of the page's plan p of options o, and the
// plan its downloads hold (export.MaxTextHeld, searched as the page
// searches): nil for both when the downloads hold p's layout, as they do
// where MaxText runs it; a Held only where they hold MaxText's best.
func (h *Handler) maxTextHeld(ctx context.Context, o plan.Options, p plan.Plan) (*heldView, *export.Held) {
	held, err := h.heldOf(ctx, o, p)
	if held == nil {
		return nil, nil
	}
	v := &heldView{Why: export.Refusal(held.Refused, label)}
	if err != nil {
		_, fes := h.status(err)
		v.None = oneLine(fes.Phrase(label))
		return v, nil
	}
	j := held.Plan.JSON(label)
	v.J = &j
	return v, held
}

// heldOf is export.MaxTextHeld of the plan p of options o, searched as
// the page searches, with a plan held that does not fit refused
// (errUnfit), as its download is.
func (h *Handler) heldOf(ctx context.Context, o plan.Options, p plan.Plan) (*export.Held, error) {
	held, err := export.MaxTextHeld(o, p, func(o plan.Options) (plan.Plan, error) {
		out, err := h.run(ctx, o, nil, false)
		return out.plan, err
	})
	if held == nil || err != nil {
		return held, err
	}
	if mem := held.Plan.Best.Estimate.Memory; !mem.Fits() {
		return held, errUnfit{mem.Shortfall()}
	}
	return held, nil
}

// The query parameters of the xpk download besides the plan's: export
// xpk's own flags (export.XPKOptions), spelt as keys.
const (
	optionCluster         plan.Option = "cluster"
	optionWorkload        plan.Option = "workload"
	optionDockerImage     plan.Option = "docker_image"
	optionBaseDockerImage plan.Option = "base_docker_image"
	optionCapacity        plan.Option = "capacity"
	optionReservation     plan.Option = "reservation"
	optionMaxRestarts     plan.Option = "max_restarts"
)

// xpkKeys are the xpk download's query keys besides the plan form's, each
// read once.
var xpkKeys = queryKeys{string(optionCluster): false, string(optionWorkload): false, string(optionDockerImage): false,
	string(optionBaseDockerImage): false, string(optionCapacity): false, string(optionReservation): false, string(optionMaxRestarts): false}

// defaultBaseDockerImage is the xpk download's image when the query names
// none: the local image MaxText's build_maxtext_docker_image makes, to
// which xpk adds the working directory (MaxText's documented xpk flow, run
// from a MaxText checkout). xpk's own default, python:3.10, has no MaxText.
const defaultBaseDockerImage = "maxtext_base_image"

// serveXPK plans the query and downloads the xpk command that launches
// it, with the query's xpk options (xpkOptions) and what budget's modes
// table says the capacity asked does not serve of its slices, as export
// xpk writes it.
func (h *Handler) serveXPK(w http.ResponseWriter, r *http.Request) {
	xo, bad := xpkOptions(r.URL.Query())
	h.download(w, r, true, xpkKeys, bad, fixedName("xpk.sh"), "text/x-shellscript", func(w io.Writer, p plan.Plan, held *export.Held) error {
		if mem := p.Best.Estimate.Memory; !mem.Fits() {
			return errUnfit{mem.Shortfall()}
		}
		xo := xo
		xo.CapacityWarnings = budget.GKEWarnings(string(xo.Capacity), p.Request.Multislice.Slice.Chip.Generation)
		return export.XPKOf(w, p, held, xo)
	})
}

// xpkOptions are the xpk download's options in query q, as export xpk's
// flags set them: the cluster (my-cluster when none), the workload
// (shardlab when none), the image (docker_image, or base_docker_image;
// when neither, defaultBaseDockerImage), the capacity mode (the cluster's
// when none; reservation when only a reservation is named) and
// max_restarts (0 when none; at most export.MaxRestarts, as the CLI's
// flag). A value export checks alone (a name, the reservation, an image,
// the restarts) is refused here, before the search it would waste,
// naming its key; what export checks of them together (a
// reservation under another mode, both images) it refuses after the
// search, its fields spelt as the query's keys (export.Error.Phrase).
func xpkOptions(q url.Values) (export.XPKOptions, fieldErrors) {
	var bad fieldErrors
	for _, k := range slices.Sorted(maps.Keys(xpkKeys)) {
		if fe := notText(plan.Option(k), q.Get(k)); fe != nil {
			bad = append(bad, fe)
			q.Del(k) // its default: refused once, for what it is
		}
	}
	get := func(o plan.Option) string { return q.Get(string(o)) }
	xo := export.XPKOptions{Cluster: cmp.Or(get(optionCluster), "my-cluster"), Workload: cmp.Or(get(optionWorkload), "shardlab"),
		DockerImage: get(optionDockerImage), BaseDockerImage: get(optionBaseDockerImage), Reservation: get(optionReservation)}
	if xo.DockerImage == "" && xo.BaseDockerImage == "" {
		xo.BaseDockerImage = defaultBaseDockerImage
	}
	refuse := func(o plan.Option, err error) {
		var ee *export.Error
		switch {
		case errors.As(err, &ee):
			bad = append(bad, textOf(o, "%s, %s", ee.Value, ee.Want))
		case err != nil:
			bad = append(bad, textOf(o, "%v", err))
		}
	}
	refuse(optionCluster, export.ValidName(string(optionCluster), xo.Cluster))
	refuse(optionWorkload, export.ValidName(string(optionWorkload), xo.Workload))
	if xo.Reservation != "" {
		refuse(optionReservation, export.ValidReservation(string(optionReservation), xo.Reservation))
	}
	for _, img := range []struct {
		o    plan.Option
		name string
	}{{optionDockerImage, get(optionDockerImage)}, {optionBaseDockerImage, get(optionBaseDockerImage)}} {
		if img.name != "" {
			refuse(img.o, export.ValidImage(string(img.o), img.name))
		}
	}
	c, err := export.ParseCapacity(get(optionCapacity))
	refuse(optionCapacity, err)
	if xo.Capacity = c; xo.Reservation != "" && c == export.CapacityDefault {
		xo.Capacity = export.CapacityReservation
	}
	if s := get(optionMaxRestarts); s != "" {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 || n > export.MaxRestarts {
			bad = append(bad, textOf(optionMaxRestarts, "%q, want a whole number from 0 to %d", s, export.MaxRestarts))
			n = 0
		}
		xo.MaxRestarts, xo.MaxRestartsGiven = n, true
	}
	return xo, bad
}

// planJSON is plan.json: what plan --json --verify prints, the plan with
// the verify steps the page shows under it.
type planJSON struct {
	plan.JSON
	Verify export.Steps `json:"verify"`
}

// servePlanJSON plans the query and downloads what plan --json --verify
// prints, the steps spelt as the page spells them: as the page's, those
// of the layout the MaxText download holds where it is MaxText's best in
// place of the plan (Steps.Held names it). A layout that does not fit is
// answered 422 with that plan (planStatus), as plan prints it and exits 1.
func (h *Handler) servePlanJSON(w http.ResponseWriter, r *http.Request) {
	o, _, _ := planForm.options(r.URL.RawQuery, h.cfg, nil)
	h.download(w, r, false, nil, nil, fixedName("plan.json"), "application/json", func(w io.Writer, p plan.Plan, _ *export.Held) error {
		steps, _ := stepsOf(p, o)
		if held, err := h.heldOf(r.Context(), o, p); held != nil && err == nil {
			steps, _ = heldStepsOf(held, o)
		}
		return schema.Write(w, planJSON{p.JSON(plan.Option.Flag), steps})
	})
}

// errUnfit refuses to export a layout that does not fit: over is
// Memory.Shortfall.
type errUnfit struct{ over string }

func (e errUnfit) Error() string {
	return fmt.Sprintf("the layout does not fit (%s); nothing exported", e.over)
}

// fixedName names a download the same whatever the plan.
func fixedName(name string) func(plan.Plan) string { return func(plan.Plan) string { return name } }

// download plans the query, whose keys are the plan form's and keys, and
// writes the plan as write does, named by name, with its status
// (planStatus); more are mistakes in the values of keys. The query's mistakes (checkQuery, the form's values,
// more) are refused before the search, each named by its key or the
// form's label. A download to MaxText (maxText: its YAML, the xpk
// command) plans as its CLI export does: the query's options as the page
// plans them, then, where MaxText cannot run that plan, MaxText's best
// (export.MaxTextHeld), which write gets with the Held that says so; a
// framework the query names that the export cannot honour
// (export.MaxTextOptions), and what the export's own request refuses, are
// refused before any search, with the query's other mistakes.
func (h *Handler) download(w http.ResponseWriter, r *http.Request, maxText bool, keys queryKeys, more fieldErrors,
	name func(plan.Plan) string, ctype string, write func(io.Writer, plan.Plan, *export.Held) error) {
	o, _, bad := planForm.options(r.URL.RawQuery, h.cfg, keys)
	bad = append(bad, more...)
	if maxText {
		mo, err := export.MaxTextOptions(o)
		fe, named := optionError(err)
		if named {
			bad = append(bad, fe) // refused with the query's other mistakes
		} else if err == nil {
			_, err = parseAll(mo, bad) // the export's own request
		}
		if err != nil && !named {
			h.fail(w, err, planForm.keyLabel)
			return
		}
	}
	out, err := h.run(r.Context(), o, bad, false)
	p, held := out.plan, (*export.Held)(nil)
	if err == nil && maxText {
		if held, err = h.heldOf(r.Context(), o, p); held != nil && err == nil {
			p = held.Plan
		}
	}
	var b strings.Builder
	if err == nil {
		err = write(&b, p, held)
	}
	switch {
	case err != nil && ctype == "application/json":
		h.writeErrorJSON(w, err) // a JSON download's error is JSON too
		return
	case err != nil:
		h.fail(w, err, planForm.keyLabel)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Disposition", `attachment; filename="`+name(p)+`"`)
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(planStatus(p)) // plan.json of a layout that does not fit: 422
	io.WriteString(w, b.String())
}
