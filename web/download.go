package web

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"shardlab/export"
	"shardlab/plan"
)

// serveMaxText plans the query and downloads the chosen layout as a
// MaxText config.
func (h *Handler) serveMaxText(w http.ResponseWriter, r *http.Request) {
	// MaxText reads a config file only by a name ending in .yml.
	fileName := func(p plan.Plan) string {
		if cfg, err := export.MaxText(p); err == nil {
			return cfg.File()
		}
		return "shardlab.yml"
	}
	h.download(w, r, fileName, "application/yaml", func(w io.Writer, p plan.Plan) error {
		if mem := p.Best.Estimate.Memory; !mem.Fits() {
			return errUnfit{mem.Shortfall()}
		}
		cfg, err := export.MaxText(p)
		if err != nil {
			return err
		}
		return cfg.WriteYAML(w)
	})
}

// The query parameters of the xpk download: the cluster, and the image
// that has MaxText (one of the two).
const (
	optionCluster         plan.Option = "cluster"
	optionDockerImage     plan.Option = "docker_image"
	optionBaseDockerImage plan.Option = "base_docker_image"
)

// defaultBaseDockerImage is the xpk download's image when the query names
// none: the local image MaxText's build_maxtext_docker_image makes, to
// which xpk adds the working directory (MaxText's documented xpk flow, run
// from a MaxText checkout). xpk's own default, python:3.10, has no MaxText.
const defaultBaseDockerImage = "maxtext_base_image"

// serveXPK plans the query and downloads the xpk command that launches
// it, for the cluster the query's cluster names (my-cluster when none) and
// the image it names (docker_image, or base_docker_image; when neither,
// defaultBaseDockerImage).
func (h *Handler) serveXPK(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cluster := q.Get(string(optionCluster))
	if cluster == "" {
		cluster = "my-cluster"
	}
	xo := export.XPKOptions{Cluster: cluster, Workload: "shardlab",
		DockerImage: q.Get(string(optionDockerImage)), BaseDockerImage: q.Get(string(optionBaseDockerImage))}
	if xo.DockerImage == "" && xo.BaseDockerImage == "" {
		xo.BaseDockerImage = defaultBaseDockerImage
	}
	var ee *export.Error
	if err := export.ValidName(string(optionCluster), cluster); errors.As(err, &ee) {
		// checked before the search, which a bad name would waste
		fe := textOf(optionCluster, "%s, %s", ee.Value, ee.Want)
		http.Error(w, fe.Phrase(label), http.StatusBadRequest)
		return
	}
	h.download(w, r, fixedName("xpk.sh"), "text/x-shellscript", func(w io.Writer, p plan.Plan) error {
		if mem := p.Best.Estimate.Memory; !mem.Fits() {
			return errUnfit{mem.Shortfall()}
		}
		return export.XPK(w, p, xo)
	})
}

// servePlanJSON plans the query and downloads what plan --json prints.
func (h *Handler) servePlanJSON(w http.ResponseWriter, r *http.Request) {
	h.download(w, r, fixedName("plan.json"), "application/json", func(w io.Writer, p plan.Plan) error {
		return p.WriteJSON(w, plan.Option.Flag)
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

func (h *Handler) download(w http.ResponseWriter, r *http.Request, name func(plan.Plan) string, ctype string, write func(io.Writer, plan.Plan) error) {
	o, _, bad := planForm.options(r.URL.Query(), h.cfg)
	out, err := h.run(r.Context(), o, bad, false)
	var b strings.Builder
	if err == nil {
		err = write(&b, out.plan)
	}
	if err != nil {
		h.fail(w, err, label)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Disposition", `attachment; filename="`+name(out.plan)+`"`)
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	io.WriteString(w, b.String())
}
