package plan

import (
	"errors"
	"fmt"
	"strings"

	"shardlab/hw"
)

// SearchScope plans the job on the smallest footprint of the chip's
// generation that can run it: a single host if the job fits one VM, else
// the smallest slice, else several of the largest slices joined by DCN (up
// to maxSlices). It tries the generation's slices of whole VMs
// (hw.Slice.WholeHosts, budget's training slices too), from a 1-chip VM
// where there is one (v5litepod-1, v6e-1). r.Multislice is ignored.
func SearchScope(r Request, c hw.Chip, maxSlices int) (Plan, error) {
	var tried []string // texts that name options
	explain := func(p Plan) Plan {
		if n := len(tried); n > 3 {
			tried = append(tried[:2:2], fmt.Sprintf("… %d more", n-3), tried[n-1])
		}
		if len(tried) > 0 {
			n := note(OptionTPU, "smallest footprint that runs the job; smaller ones cannot: %s", text(strings.Join(tried, "; ")))
			p.Reasons = append([]Note{n}, p.Reasons...)
		}
		return p
	}
	// try plans on n slices of s; done is false when nothing fits there.
	try := func(s hw.Slice, n int) (p Plan, done bool, err error) {
		ms, err := hw.NewMultislice(s, n, 0)
		if err != nil {
			return Plan{}, true, err
		}
		r.Multislice = ms
		p, err = search(r)
		var none *NoPlanError
		switch {
		case err == nil:
			return explain(p), true, nil
		case errors.As(err, &none):
			tried = append(tried, textf("%s: ", ms.Slice.AcceleratorType())+string(firstReason(none)))
			return Plan{}, false, nil
		}
		return Plan{}, true, err
	}
	var largest hw.Slice
	for _, name := range c.AcceleratorTypes() {
		s, err := hw.ParseAcceleratorType(name)
		if err != nil {
			return Plan{}, err
		}
		if !s.WholeHosts() || s.Chips() > c.MaxSliceChips {
			continue // partial hosts are not training slices; v5p lists names past its largest single slice
		}
		largest = s
		if p, done, err := try(s, 1); done {
			return p, err
		}
		if s.Chips() == c.MaxSliceChips {
			break
		}
	}
	for n := 2; n <= maxSlices && c.DCNPerChip > 0; n *= 2 {
		if p, done, err := try(largest, n); done {
			return p, err
		}
	}
	return Plan{}, &NoPlanError{On: fmt.Sprintf("any %s footprint up to %d slices of %s", c.Generation, maxSlices, largest.AcceleratorType())}
}
