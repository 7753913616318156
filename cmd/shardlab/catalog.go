package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/internal/errtext"
	"shardlab/model"
	"shardlab/unit"
)

// catalogUsage is what 'shardlab hw -h' and 'shardlab model -h' print.
var catalogUsage = map[string]string{
	"hw": `usage of shardlab hw:
  shardlab hw list [--json]        the TPU catalog
  shardlab hw show NAME [--json]   one generation (v5p) or accelerator type (v5p-128)
`,
	"model": `usage of shardlab model:
  shardlab model list [--json]        the model catalog
  shardlab model show NAME [--json]   a catalog model (llama3-8b) or a YAML/JSON spec file of at most 1 MiB
  shardlab model show NAME --spec     the model as the YAML spec file --model takes, to edit and plan
`,
}

// catalogOut is how hw and model print: text, --json, or (model show)
// --spec, the spec file --model takes.
type catalogOut struct{ json, spec bool }

// newCatalogFlags defines the flags of hw and model.
func newCatalogFlags(cmd string) (*flag.FlagSet, *catalogOut) {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	out := new(catalogOut)
	fs.BoolVar(&out.json, "json", false, "print JSON")
	if cmd == "model" {
		fs.BoolVar(&out.spec, "spec", false, "show: print the model as the YAML spec file --model takes, to edit and plan")
	}
	return fs, out
}

// catalogArgs reads "list" or "show NAME" with optional flags before or
// after the name; -h gives the usage.
func catalogArgs(cmd string, args []string) (sub string, names []string, out catalogOut, err error) {
	if len(args) > 0 && isHelp(args[0]) || len(args) > 1 && isHelp(args[1]) {
		return "", nil, out, helpText(catalogUsage[cmd])
	}
	if len(args) == 0 {
		return "", nil, out, bad("%s: want '%s list' or '%s show NAME'", cmd, cmd, cmd)
	}
	fs, o := newCatalogFlags(cmd)
	fs.SetOutput(io.Discard)
	names, err = parseInterleaved(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		err = helpText(catalogUsage[cmd])
	}
	switch {
	case err == nil && o.spec && o.json:
		err = bad("%s: --spec and --json: give one (--spec prints the YAML spec file, --json the spec with its counts)", cmd)
	case err == nil && o.spec && args[0] != "show":
		err = bad("%s %s: --spec prints one model, want '%s show NAME --spec'", cmd, args[0], cmd)
	}
	return args[0], names, *o, err
}

// parseInterleaved parses flags that may come before or after positional
// arguments ("hw show v5p --json") and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	g := guard(fs)
	defer g.restore()
	var names []string
	for {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			return nil, err
		} else if err != nil && g.err != nil {
			return nil, g.err
		} else if err != nil {
			return nil, bad("%s: %v", fs.Name(), err)
		}
		if fs.NArg() == 0 {
			return names, nil
		}
		if why := model.NotText(fs.Arg(0)); why != "" {
			return nil, bad("%s: argument %s, want printable text: %s", fs.Name(), strconv.QuoteToASCII(fs.Arg(0)), why)
		}
		names = append(names, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func runHW(args []string, stdout, stderr io.Writer) error {
	return runCatalog("hw", args, "one NAME, a generation (v5p) or an accelerator type (v5p-128)",
		func(asJSON bool) error { return listHW(stdout, asJSON) },
		func(name string, out catalogOut) error { return showHW(name, out.json, stdout) })
}

// runCatalog runs catalog command cmd (hw, model): list, or show the one
// name it is given (want says what show takes).
func runCatalog(cmd string, args []string, want string, list func(asJSON bool) error, show func(name string, out catalogOut) error) error {
	sub, names, out, err := catalogArgs(cmd, args)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		if len(names) > 0 {
			return bad("%s list: unexpected argument %q; '%s show NAME' shows one", cmd, names[0], cmd)
		}
		return list(out.json)
	case "show":
		if len(names) != 1 {
			return bad("%s show: want %s", cmd, want)
		}
		return show(names[0], out)
	}
	return bad("%s: unknown subcommand %q, want list or show", cmd, sub)
}

// listHW writes the TPU catalog, a row per generation.
func listHW(stdout io.Writer, asJSON bool) error {
	chips := hw.Chips()
	if asJSON {
		return writeJSON(stdout, struct {
			Chips []hw.Chip `json:"chips"`
		}{chips})
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "generation\tname\tbf16\tHBM\tHBM BW\tICI per link\tDCN per chip\tTC x MXU\thost\tmax slice")
	for _, c := range chips {
		mxu := "?"
		if c.MXUsPerTensorCore > 0 {
			mxu = fmt.Sprint(c.MXUsPerTensorCore)
		}
		dcn := "no multislice"
		if c.DCNPerChip > 0 {
			dcn = fmt.Sprintf("%.1f Gbit/s", c.DCNPerChip.Bits()/1e9)
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%v\t%d x %v\t%s\t%d x %s of %dx%d\t%s (%s)\t%s\n", c.Generation, c.Name, c.PeakBF16, c.HBM,
			c.HBMBandwidth, c.ICILinks, c.ICILinkBandwidth, dcn, c.TensorCores, mxu, c.MXUDim, c.MXUDim, c.Host.MachineType, unit.Plural(c.Host.Chips, "chip"),
			unit.Plural(c.MaxSliceChips, "chip"))
	}
	return tw.Flush()
}

// showHW writes one generation, or one accelerator type and its
// generation.
func showHW(name string, asJSON bool, w io.Writer) error {
	c, slice, err := parseTPU("hw show", name)
	if err != nil {
		return err
	}
	if asJSON {
		return showHWJSON(w, c, slice)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if slice != nil {
		var wraps []string
		for i := range slice.Topology.Dims() {
			wraps = append(wraps, fmt.Sprint(slice.Wraps(i)))
		}
		fmt.Fprintf(tw, "accelerator type\t%s\n", slice.AcceleratorType())
		fmt.Fprintf(tw, "topology\t%s (wraparound %s)\n", slice.Topology, strings.Join(wraps, ", "))
		fmt.Fprintf(tw, "chips\t%d on %s\n", slice.Chips(), unit.Plural(slice.Hosts(), "host"))
	}
	fmt.Fprintf(tw, "generation\t%s (%s)\n", c.Generation, c.Name)
	fmt.Fprintf(tw, "peak bf16\t%v\n", c.PeakBF16)
	if c.PeakFP8 > 0 {
		fmt.Fprintf(tw, "peak fp8\t%v\n", c.PeakFP8)
	}
	if c.PeakInt8 > 0 {
		fmt.Fprintf(tw, "peak int8\t%.0f TOP/s\n", float64(c.PeakInt8)/1e12)
	}
	fmt.Fprintf(tw, "HBM\t%v at %v\n", c.HBM, c.HBMBandwidth)
	mxus := "MXUs per TensorCore not published"
	if c.MXUsPerTensorCore > 0 {
		mxus = unit.Plural(c.MXUsPerTensorCore, "MXU") + " each"
	}
	fmt.Fprintf(tw, "TensorCores\t%d, %s, MXU %dx%d\n", c.TensorCores, mxus, c.MXUDim, c.MXUDim)
	fmt.Fprintf(tw, "ICI\t%dD torus, %d links of %v each way\n", c.TorusDims, c.ICILinks, c.ICILinkBandwidth)
	writeVMs(tw, c, slice)
	fmt.Fprintf(tw, "JAX devices per chip\t%d\n", c.JAXDevicesPerChip)
	fmt.Fprintf(tw, "largest slice\t%s (pod %s)\n", unit.Plural(c.MaxSliceChips, "chip"), unit.Plural(c.PodChips, "chip"))
	types := c.AcceleratorTypes()
	if len(types) > 8 {
		types = append(types[:6:6], "…", types[len(types)-1])
	}
	fmt.Fprintf(tw, "accelerator types\t%s\n", strings.Join(types, ", "))
	fmt.Fprintf(tw, "sources\t%s\n", strings.Join(c.Sources, "; "))
	return tw.Flush()
}

// writeVMs writes the DCN and the VMs of a generation, or of one
// accelerator type when slice is one: the VM it is made of (v5litepod-8's
// ct5lp-hightpu-8t).
func writeVMs(tw io.Writer, c hw.Chip, slice *hw.Slice) {
	vm := hw.Slice{Chip: c} // a generation alone: its Host VM
	if slice != nil {
		vm = *slice
	}
	if c.DCNPerChip > 0 {
		fmt.Fprintf(tw, "DCN\t%.1f Gbit/s per chip, %.0f Gbit/s per host\n", c.DCNPerChip.Bits()/1e9, vm.DCNPerHost().Bits()/1e9)
	} else {
		fmt.Fprintf(tw, "DCN\tno Multislice\n")
	}
	fmt.Fprintf(tw, "host VM\t%s\n", hostText(vm.Host()))
	for _, h := range c.SliceHosts {
		if slice == nil {
			fmt.Fprintf(tw, "whole-slice VM\t%s (the whole %d-chip slice)\n", hostText(h), h.Chips)
		}
	}
	if h := c.SingleHost; h.Chips > 0 {
		// the training slice of its chips is costed as the VMs Slice.Host
		// gives (v6e-8: two 4t), not as this VM; smaller slices have their own
		training := ""
		if s, err := hw.ParseAcceleratorType(c.AcceleratorType(h.Chips)); err == nil {
			training = fmt.Sprintf("; training costs %s as %s", s.AcceleratorType(), unit.Plural(s.Hosts(), s.Host().MachineType+" VM"))
		}
		fmt.Fprintf(tw, "single-host VM\t%s: %s as one VM (serving%s)\n", h.MachineType, unit.Plural(h.Chips, "chip"), training)
	}
}

// showHWJSON writes a generation as JSON, inside its accelerator type
// when slice is one.
func showHWJSON(w io.Writer, c hw.Chip, slice *hw.Slice) error {
	if slice == nil {
		return writeJSON(w, c)
	}
	return writeJSON(w, struct {
		AcceleratorType string `json:"accelerator_type"`
		Topology        string `json:"topology"`
		Chips           int    `json:"chips"`
		Hosts           int    `json:"hosts"`
		// VM is the VM the slice is made of (hw.Slice.Host), which is
		// not always the chip's usual host (v5litepod-8's 8-chip VM).
		VM   hw.Host `json:"vm"`
		Chip hw.Chip `json:"chip"`
	}{slice.AcceleratorType(), slice.Topology.String(), slice.Chips(), slice.Hosts(), slice.Host(), c})
}

// hostText describes a host VM: its machine type, chips, vCPUs, RAM,
// NUMA nodes and disks, each where known.
func hostText(h hw.Host) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", h.MachineType, unit.Plural(h.Chips, "chip"))
	if h.VCPUs > 0 {
		fmt.Fprintf(&b, ", %s", unit.Plural(h.VCPUs, "vCPU"))
	}
	if h.RAM > 0 {
		fmt.Fprintf(&b, ", %.0f GB RAM", float64(h.RAM)/1e9)
	}
	if h.NUMANodes > 0 {
		fmt.Fprintf(&b, ", %s", unit.Plural(h.NUMANodes, "NUMA node"))
	}
	if h.BootDisk != "" {
		fmt.Fprintf(&b, ", boot disk %s, data disks %s", h.BootDisk, strings.Join(h.DataDisks, " or "))
	}
	return b.String()
}

func runModel(args []string, stdout, stderr io.Writer) error {
	return runCatalog("model", args, "one NAME or spec file",
		func(asJSON bool) error { return listModels(stdout, asJSON) },
		func(name string, out catalogOut) error {
			s, err := loadModel("model show", name)
			if err != nil {
				return err
			}
			switch {
			case out.json:
				return writeJSON(stdout, s.Summarize())
			case out.spec:
				b, err := s.YAML()
				if err != nil {
					return err
				}
				_, err = stdout.Write(b)
				return err
			}
			return showModel(stdout, s)
		})
}

// listModels writes the model catalog, a row per model, marking those
// plan refuses to train (cost.CheckTrainable, the refusal's owner, which
// plan asks) with its reason: in text a "train" column and the reasons
// under the table, in JSON plan_refuses.
func listModels(stdout io.Writer, asJSON bool) error {
	specs := model.Catalog()
	if asJSON {
		type entry struct {
			model.Summary
			Refuses string `json:"plan_refuses,omitempty"`
		}
		out := make([]entry, len(specs))
		for i, s := range specs {
			out[i] = entry{s.Summarize(), refusal(s)}
		}
		return writeJSON(stdout, struct {
			Models []entry `json:"models"`
		}{out})
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "name\tparams\tpublished\tactive\tlayers\td_model\theads\tkv\td_ff\texperts\tvocab\tseq\ttrain\t")
	var refused []string
	for _, s := range specs {
		active, experts, train := "-", "-", "yes"
		if s.MoE() {
			active = fmt.Sprintf("%.2fB", float64(s.ParamCount().Active())/1e9)
			experts = fmt.Sprintf("%d/%d", s.ExpertsPerToken, s.Experts)
		}
		if why := refusal(s); why != "" {
			train = "no"
			refused = append(refused, fmt.Sprintf("  %s: %s\n", s.Name, why))
		}
		fmt.Fprintf(tw, "%s\t%.2fB\t%.2fB\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%s\t\n", s.Name, float64(s.ParamCount().Total())/1e9,
			float64(s.Published)/1e9, active, s.Layers, s.DModel, s.Heads, s.KV(), s.DFF, experts, s.Vocab, s.SeqLen, train)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(refused) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(stdout, "\nplan refuses to train (train no; shardlab inference serves them):\n%s", strings.Join(refused, ""))
	return err
}

// refusal is why plan refuses to train s (cost.CheckTrainable), in the
// refusal's own words; "" where it trains it.
func refusal(s model.Spec) string {
	if err := cost.CheckTrainable(s); err != nil {
		return errtext.Detail(err)
	}
	return ""
}

// showModel writes one model: its shape, parameters (by where they live)
// and training FLOPs per token.
func showModel(stdout io.Writer, s model.Spec) error {
	p := s.ParamCount()
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "name\t%s\n", s.Name)
	fmt.Fprintf(tw, "shape\t%s, d_model %d, %s (%d KV) of %d, d_ff %d, vocab %d, seq %d\n",
		unit.Plural(s.Layers, "layer"), s.DModel, unit.Plural(s.Heads, "head"), s.KV(), s.Head(), s.DFF, s.Vocab, s.SeqLen)
	if s.Windowed() {
		g := s.Global()
		fmt.Fprintf(tw, "attention\t%d local layers over a sliding window of %d tokens (the heads above), %d global of %d KV heads of %d (keys as values: %v); attention parameters a global layer %d\n",
			s.LocalLayers(), s.SlidingWindow, s.GlobalLayers(), g.KV(), g.Head(), s.GlobalKeyAsValue, p.GlobalAttention)
	}
	fmt.Fprintf(tw, "parameters\t%d (%.3fB)", p.Total(), float64(p.Total())/1e9)
	if s.Published > 0 {
		fmt.Fprintf(tw, "; published %d (%+.2f%%)", s.Published, 100*float64(p.Total()-s.Published)/float64(s.Published))
	}
	fmt.Fprintln(tw)
	if s.MoE() {
		fmt.Fprintf(tw, "active parameters\t%d (%.3fB)", p.Active(), float64(p.Active())/1e9)
		if s.PublishedActive > 0 {
			fmt.Fprintf(tw, "; published %d (%+.2f%%)", s.PublishedActive, 100*float64(p.Active()-s.PublishedActive)/float64(s.PublishedActive))
		}
		fmt.Fprintln(tw)
		shared := ""
		if s.SharedFF() != s.ExpertFF() {
			shared = fmt.Sprintf(" (shared: d_ff %d)", s.SharedFF())
		}
		fmt.Fprintf(tw, "experts\t%d routed (%d per token) and %d shared of d_ff %d%s in %d of %d layers\n",
			s.Experts, s.ExpertsPerToken, s.SharedExperts, s.ExpertFF(), shared, p.MoELayers, s.Layers)
		fmt.Fprintf(tw, "  per MoE layer\tattention %d, router %d, experts %d x %d, shared %d, norms %d\n",
			p.Attention, p.Router, p.Experts, p.Expert, p.Shared, p.Norms)
	}
	if p.DenseLayers() > 0 {
		fmt.Fprintf(tw, "  per dense layer\tattention %d, MLP %d, norms %d\n", p.Attention, p.MLP, p.Norms)
	}
	fmt.Fprintf(tw, "  embeddings\tinput %d, output %d\n", p.Embedding, p.Output)
	window := ""
	if s.Windowed() {
		window = fmt.Sprintf(", T at most %d in a local layer", s.SlidingWindow)
	}
	fmt.Fprintf(tw, "training FLOPs/token\t%.4g at seq %d (6N + 12·L·H·Q·T; N the matmul parameters a token uses%s)\n", s.FLOPsPerToken(s.SeqLen, false), s.SeqLen, window)
	if s.Source != "" {
		fmt.Fprintf(tw, "source\t%s\n", s.Source)
	}
	return tw.Flush()
}
