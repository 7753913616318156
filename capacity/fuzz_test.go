package capacity

import (
	"math"
	"testing"
	"time"
)

// FuzzParseMode: parse(String(m)) == m, and nothing panics.
func FuzzParseMode(f *testing.F) {
	for _, s := range []string{"managed", "all-capacity", "ALL_CAPACITY", "", "x", "sub-block", "VM"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if m, err := ParseMode(s); err == nil {
			if back, err := ParseMode(m.String()); err != nil || back != m {
				t.Errorf("ParseMode(%q) = %v; ParseMode(%q) = %v, %v", s, m, m.String(), back, err)
			}
		}
		if g, err := ParseGranularity(s); err == nil {
			if back, err := ParseGranularity(g.String()); err != nil || back != g {
				t.Errorf("ParseGranularity(%q) = %v; back %v, %v", s, g, back, err)
			}
		}
	})
}

// FuzzRun: any configuration is either refused or simulated without a
// panic, and then goodput and badput add up to the horizon.
func FuzzRun(f *testing.F) {
	f.Add(1e-4, int64(time.Hour), int64(10*time.Minute), int64(time.Minute), int64(time.Hour), int64(90*24*time.Hour), 0, 2, uint64(1))
	f.Add(math.NaN(), int64(-1), int64(0), int64(0), int64(0), int64(0), 5, -1, uint64(2))
	f.Add(0.5, int64(time.Second), int64(time.Second), int64(time.Second), int64(time.Second), int64(24*time.Hour), 2, 0, uint64(3))
	f.Fuzz(func(t *testing.T, rate float64, repair, startup, save, interval, maint int64, gran, spares int, seed uint64) {
		p, c := failureCase(t)
		if spares < 0 || spares > 128 {
			spares = 2
		}
		p.Reserved = spares
		c.ChipFailuresPerHour, c.Repair, c.Startup, c.Save, c.Restore = rate, time.Duration(repair), time.Duration(startup), time.Duration(save), time.Duration(save)
		c.Interval, c.MaintenanceEvery, c.Granularity, c.Seed = time.Duration(interval), time.Duration(maint), Granularity(gran), seed
		c.Horizon = 7 * day
		if c.ChipFailuresPerHour > 1e-2 {
			c.ChipFailuresPerHour = 1e-2 // keep a run short
		}
		r, err := Run(p, c)
		if err != nil {
			return
		}
		if got := r.Productive + r.Badput.Total(); got != r.Horizon {
			t.Errorf("%+v: productive + badput = %v, want %v", c, got, r.Horizon)
		}
	})
}
