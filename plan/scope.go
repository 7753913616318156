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
// to maxSlices). r.Multislice is ignored.
func SearchScope(r Request, c hw.Chip, maxSlices int) (Plan, error) {
	var tried []string
	note := func(p Plan) Plan {
		if n := len(tried); n > 3 {
			tried = append(tried[:2:2], fmt.Sprintf("… %d more", n-3), tried[n-1])
		}
		if len(tried) > 0 {
			p.Reasons = append([]string{fmt.Sprintf("smallest footprint that runs the job; smaller ones cannot: %s", strings.Join(tried, "; "))}, p.Reasons...)
		}
		return p
	}
	types := c.AcceleratorTypes()
	var largest hw.Slice
	for _, name := range types {
		s, err := hw.ParseAcceleratorType(name)
		if err != nil {
			return Plan{}, err
		}
		if s.Chips() < c.Host.Chips || s.Chips() > c.MaxSliceChips {
			continue // partial hosts are not training slices; v5p lists names past its largest single slice
		}
		largest = s
		ms, err := hw.NewMultislice(s, 1, 0)
		if err != nil {
			return Plan{}, err
		}
		r.Multislice = ms
		p, err := Search(r)
		if err == nil {
			return note(p), nil
		}
		if !errors.Is(err, ErrNoPlan) {
			return Plan{}, err
		}
		tried = append(tried, fmt.Sprintf("%s: %s", name, shortReason(err)))
		if s.Chips() == c.MaxSliceChips {
			break
		}
	}
	for n := 2; n <= maxSlices && c.DCNPerChip > 0; n *= 2 {
		ms, err := hw.NewMultislice(largest, n, 0)
		if err != nil {
			return Plan{}, err
		}
		r.Multislice = ms
		p, err := Search(r)
		if err == nil {
			return note(p), nil
		}
		if !errors.Is(err, ErrNoPlan) {
			return Plan{}, err
		}
	}
	return Plan{}, fmt.Errorf("plan: %w on any %s footprint up to %d slices of %s", ErrNoPlan, c.Generation, maxSlices, largest.AcceleratorType())
}

func shortReason(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	if i := strings.Index(s, ","); i >= 0 {
		s = s[:i]
	}
	return s
}
