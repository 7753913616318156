package capacity

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"shardlab/hw"
)

const day = 24 * time.Hour

// failureCase: 8 x tpu7x-256 (16 sub-blocks, 1,024 chips) on one block with
// 100 spares repaired in a minute, so a spare is always at hand; no
// maintenance and no recovery delay, so the renewal-reward formula is exact.
func failureCase(t testing.TB) (Placement, Config) {
	s, err := hw.ParseTPU("tpu7x-256")
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(s.Chip, AllCapacity, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Place(r, s, 8, 100)
	if err != nil {
		t.Fatal(err)
	}
	return p, Config{
		ChipFailuresPerHour: 1e-4, // 0.1024 job failures per hour: M = 9.8 h
		Repair:              time.Minute,
		Startup:             10 * time.Minute,
		Save:                5 * time.Minute,
		Restore:             5 * time.Minute,
		Interval:            time.Hour,
		Horizon:             365 * day,
	}
}

// meanGoodput runs seeds 1..n and returns the mean goodput and its
// standard error.
func meanGoodput(t testing.TB, p Placement, c Config, n int) (mean, se float64) {
	var sum, sq float64
	for i := range n {
		c.Seed = uint64(i + 1)
		r, err := Run(p, c)
		if err != nil {
			t.Fatal(err)
		}
		g := r.Goodput()
		sum += g
		sq += g * g
	}
	mean = sum / float64(n)
	v := (sq - float64(n)*mean*mean) / float64(n-1)
	return mean, math.Sqrt(v / float64(n))
}

// TestGoodputMatchesRenewalReward: the simulated mean goodput agrees with
// the renewal-reward expectation e^{λR}(e^{λ(T+C)} − 1)/λ per kept T within
// four standard errors (two implementations of the same model).
func TestGoodputMatchesRenewalReward(t *testing.T) {
	p, c := failureCase(t)
	lambda := JobFailureRate(p, c.ChipFailuresPerHour)
	if math.Abs(lambda-0.1024) > 1e-12 {
		t.Fatalf("JobFailureRate = %g, want 1e-4 x 1,024 chips = 0.1024", lambda)
	}
	// a 10-minute startup, and a 2-hour one where failures during the
	// restart matter: e^{λR} = 1.24 against 1 + λR = 1.21 without them
	for _, startup := range []time.Duration{10 * time.Minute, 2 * time.Hour} {
		c.Startup = startup
		want := ExpectedGoodput(c.Interval, c.Save, c.Startup+c.Restore, lambda)
		got, se := meanGoodput(t, p, c, 30)
		t.Logf("startup %v: simulated %.5f ± %.5f, renewal-reward %.5f", startup, got, se, want)
		if math.Abs(got-want) > 4*se {
			t.Errorf("startup %v: mean goodput %.5f ± %.5f (30 seeds), want %.5f within 4 standard errors", startup, got, se, want)
		}
		if se > 0.002 {
			t.Errorf("standard error %.4f is too wide for the test to tell", se)
		}
		// without failures during the restart, the expectation is off
		// by more than the interval
		r := (c.Startup + c.Restore).Hours()
		naive := c.Interval.Hours() / ((1/lambda + r) * math.Expm1(lambda*(c.Interval+c.Save).Hours()))
		if startup == 2*time.Hour && math.Abs(got-naive) <= 4*se {
			t.Errorf("startup 2h: the simulation %.5f also matches the model without failures during restart %.5f", got, naive)
		}
	}
}

// TestYoungDalyInFlatRegion: the simulated goodput at Young's and Daly's
// intervals is within 0.3 percentage points of the best of a sweep from 10
// minutes to 8 hours (common seeds).
func TestYoungDalyInFlatRegion(t *testing.T) {
	p, c := failureCase(t)
	c.Horizon = 120 * day
	mtbf := time.Duration(float64(time.Hour) / JobFailureRate(p, c.ChipFailuresPerHour))
	best, bestAt := 0.0, time.Duration(0)
	for iv := 10 * time.Minute; iv <= 8*time.Hour; iv = iv * 5 / 4 {
		c.Interval = iv
		g, _ := meanGoodput(t, p, c, 12)
		if g > best {
			best, bestAt = g, iv
		}
	}
	for _, k := range []struct {
		name string
		iv   time.Duration
	}{{"Young", Young(c.Save, mtbf)}, {"Daly", Daly(c.Save, mtbf)}} {
		c.Interval = k.iv
		g, _ := meanGoodput(t, p, c, 12)
		t.Logf("%s %v: %.4f; simulated optimum %v: %.4f", k.name, k.iv.Round(time.Minute), g, bestAt.Round(time.Minute), best)
		if g < best-0.003 {
			t.Errorf("%s interval %v: goodput %.4f, more than 0.3 points below the simulated optimum %.4f at %v", k.name, k.iv, g, best, bestAt)
		}
	}
	// the flat region is not everything: 10 minutes is clearly worse
	c.Interval = 10 * time.Minute
	if g, _ := meanGoodput(t, p, c, 12); g > best-0.01 {
		t.Errorf("10-minute interval %.4f within 1 point of the optimum %.4f: the test cannot tell intervals apart", g, best)
	}
}

func TestYoungDaly(t *testing.T) {
	// C = 5 min, M = 10 h: √(2 · 300 s · 36,000 s) = 4,647.6 s
	if got := Young(5*time.Minute, 10*time.Hour).Seconds(); math.Abs(got-4647.58) > 0.01 {
		t.Errorf("Young(5m, 10h) = %.2f s, want 4,647.58 s", got)
	}
	// x = 300/72,000: 4,647.58·(1 + √x/3 + x/9) − 300 = 4,449.72 s
	if got := Daly(5*time.Minute, 10*time.Hour).Seconds(); math.Abs(got-4449.72) > 0.05 {
		t.Errorf("Daly(5m, 10h) = %.2f s, want 4,449.72 s", got)
	}
	if got := Daly(3*time.Hour, time.Hour); got != time.Hour {
		t.Errorf("Daly(C >= 2M) = %v, want M", got)
	}
}

// TestDeterministic: the same seed gives the same result, another seed
// another one.
func TestDeterministic(t *testing.T) {
	p, c := failureCase(t)
	c.MaintenanceEvery, c.MaintenanceDown = 90*day, 4*time.Hour
	c.Seed = 7
	a, _ := Run(p, c)
	b, _ := Run(p, c)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("seed 7 twice: %+v and %+v", a, b)
	}
	c.Seed = 8
	if d, _ := Run(p, c); reflect.DeepEqual(a, d) {
		t.Errorf("seeds 7 and 8 gave the same result %+v", a)
	}
}

// TestAccounting: goodput and badput add up to the horizon exactly.
func TestAccounting(t *testing.T) {
	p, c := failureCase(t)
	c.Recovery, c.Repair = 10*time.Minute, 48*time.Hour
	p.Reserved = 1 // few spares: the job waits for repairs
	c.MaintenanceEvery, c.MaintenanceDown = 30*day, 4*time.Hour
	for seed := range uint64(5) {
		c.Seed = seed
		r, err := Run(p, c)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Productive + r.Badput.Total(); got != r.Horizon {
			t.Errorf("seed %d: productive %v + badput %v = %v, want the horizon %v", seed, r.Productive, r.Badput.Total(), got, r.Horizon)
		}
		if r.Badput.WaitingForCapacity == 0 {
			t.Errorf("seed %d: one spare repaired in 48 h, yet no waiting for capacity", seed)
		}
	}
}

// TestMaintenanceByHand: no failures, maintenance every 90 days over 181
// days (two waves); costs worked by hand.
func TestMaintenanceByHand(t *testing.T) {
	s, _ := hw.ParseTPU("tpu7x-256")
	c := Config{Startup: 10 * time.Minute, Save: 5 * time.Minute, Restore: 5 * time.Minute, Recovery: 10 * time.Minute,
		Interval: time.Hour, MaintenanceEvery: 90 * day, MaintenanceDown: 4 * time.Hour, Horizon: 181 * day}
	ac, _ := New(s.Chip, AllCapacity, 1, 0)
	mg, _ := New(s.Chip, Managed, 1, 0.05) // 8 sub-blocks held back
	for _, k := range []struct {
		name  string
		r     Reservation
		g     Granularity
		spare int
		// per wave: stops x (recovery or downtime) + stops x (startup + restore)
		stops int
		down  time.Duration
	}{
		{"reservation", ac, ByReservation, 2, 1, 4 * time.Hour},
		{"sub-block, 2 spares", ac, BySubBlock, 2, 8, 10 * time.Minute}, // 1 slice at a time
		{"sub-block, 4 spares", ac, BySubBlock, 4, 4, 10 * time.Minute}, // 2 slices at a time
		{"sub-block, no spare", ac, BySubBlock, 0, 1, 4 * time.Hour},
		{"managed", mg, BySubBlock, 0, 2, 10 * time.Minute}, // 8 held back: 4 slices at a time
	} {
		p, err := Place(k.r, s, 8, k.spare)
		if err != nil {
			t.Fatal(err)
		}
		c.Granularity = k.g
		r, err := Run(p, c)
		if err != nil {
			t.Fatal(err)
		}
		wantRecovery := 2 * time.Duration(k.stops) * k.down
		wantStartup := 2 * time.Duration(k.stops) * c.Startup
		if r.Badput.InfrastructureRecovery != wantRecovery || r.Badput.ProgramStartup != wantStartup || r.Badput.WastedProgress != 0 {
			t.Errorf("%s: recovery %v startup %v wasted %v, want %v %v 0", k.name, r.Badput.InfrastructureRecovery, r.Badput.ProgramStartup, r.Badput.WastedProgress, wantRecovery, wantStartup)
		}
	}
}

// TestCubeConfidence reproduces Google's figure of 95 % confidence of 130
// healthy cubes of 144 (the citation of Google; see README): the
// per-cube availability p* that makes P(X >= 130) = 0.95 for X ~
// Binomial(144, p*) gives HealthyAt = 130 and SparesFor(130) = 14.
func TestCubeConfidence(t *testing.T) {
	lo, hi := 0.5, 1.0
	for range 100 {
		mid := (lo + hi) / 2
		if binomialAtLeast(144, 130, mid) < 0.95 {
			lo = mid
		} else {
			hi = mid
		}
	}
	p := hi
	t.Logf("implied cube availability %.5f", p)
	if got := HealthyAt(144, p, 0.95); got != 130 {
		t.Errorf("HealthyAt(144, %.5f, 0.95) = %d, want 130", p, got)
	}
	if got := SparesFor(130, p, 0.95, 144); got != 14 {
		t.Errorf("SparesFor(130, %.5f, 0.95) = %d, want 14", p, got)
	}
	if got := HealthyAt(144, lo-1e-4, 0.95); got != 129 {
		t.Errorf("just below p*: HealthyAt = %d, want 129", got)
	}
	// a binomial tail checked by hand: P(X >= 1) for n = 2, p = 0.5 is 0.75
	if got := binomialAtLeast(2, 1, 0.5); math.Abs(got-0.75) > 1e-12 {
		t.Errorf("P(Bin(2, .5) >= 1) = %g, want 0.75", got)
	}
}

func TestConfigRefuses(t *testing.T) {
	p, c := failureCase(t)
	for _, k := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.ChipFailuresPerHour = -1 }, "chip failure rate -1"},
		{func(c *Config) { c.ChipFailuresPerHour = math.NaN() }, "chip failure rate NaN"},
		{func(c *Config) { c.ChipFailuresPerHour = math.Inf(1) }, "chip failure rate +Inf"},
		{func(c *Config) { c.Repair = -time.Second }, "repair -1s"},
		{func(c *Config) { c.Interval = 0 }, "checkpoint interval 0s"},
		{func(c *Config) { c.Horizon = 20 * 365 * day }, "horizon"},
		{func(c *Config) { c.MaintenanceEvery = time.Hour }, "maintenance interval 1h0m0s"},
	} {
		cc := c
		k.mod(&cc)
		_, err := Run(p, cc)
		if err == nil || !strings.Contains(err.Error(), k.want) || !strings.Contains(err.Error(), "want ") {
			t.Errorf("Run: %v, want an error with %q and what is accepted", err, k.want)
		}
	}
}

// BenchmarkYear: one simulated year of a full 9,216-chip TPU7x block (two
// 4,096-chip slices, 16 spare sub-blocks) at the default rates, with
// maintenance.
func BenchmarkYear(b *testing.B) {
	chip, err := hw.Lookup("tpu7x")
	if err != nil {
		b.Fatal(err)
	}
	sl := hw.Slice{Chip: chip, Topology: hw.Topology{16, 16, 16}}
	r, err := New(chip, AllCapacity, 1, 0)
	if err != nil {
		b.Fatal(err)
	}
	p, err := Place(r, sl, 2, 16)
	if err != nil {
		b.Fatal(err)
	}
	c := Config{ChipFailuresPerHour: DefaultChipFailuresPerHour, Repair: DefaultRepair, Recovery: DefaultRecovery,
		Startup: DefaultStartup, Save: 2 * time.Minute, Restore: 2 * time.Minute, Interval: 30 * time.Minute,
		MaintenanceEvery: DefaultMaintenanceEvery, MaintenanceDown: DefaultMaintenanceDown, Horizon: 365 * day}
	n := 0
	for b.Loop() {
		c.Seed = uint64(n)
		if _, err := Run(p, c); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)*365/b.Elapsed().Seconds(), "sim-days/s")
}

func TestExpectByHand(t *testing.T) {
	// 9,216 chips at 419/(54·24·16384) failures per chip-hour: 4.37 job
	// failures an hour, an MTBF of 823 s. A 1 TB checkpoint over 2,304
	// hosts at the default storage bandwidth, Daly's interval and the
	// renewal-reward goodput, each from its own formula.
	job := Job{TokensPerSecond: 1e7, Checkpoint: 1e12}
	e := Expect(job, 9216, 2304, 1e12)
	rate := 419.0 / (54 * 24 * 16384) * 9216
	if math.Abs(e.FailuresPerHour-rate)/rate > 1e-12 {
		t.Errorf("failures per hour %v, want %v", e.FailuresPerHour, rate)
	}
	secs := 1e12 / (float64(DefaultStoragePerHost) * 2304)
	save := time.Duration(secs * 1e9)
	if d := e.Save - save; d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("save %v, want %v", e.Save, save)
	}
	if e.Restart != DefaultRecovery+DefaultStartup+e.Save {
		t.Errorf("restart %v", e.Restart)
	}
	mtbf := time.Duration(float64(time.Hour) / rate)
	if e.Interval != Daly(e.Save, mtbf) {
		t.Errorf("interval %v, want Daly's %v", e.Interval, Daly(e.Save, mtbf))
	}
	if g := ExpectedGoodput(e.Interval, e.Save, e.Restart, rate); g != e.Goodput || g <= 0 || g >= 1 {
		t.Errorf("goodput %v, want %v in (0, 1)", e.Goodput, g)
	}
	want := 1e12 / (1e7 * e.Goodput)
	if got := float64(e.TimeToTrain); math.Abs(got-want)/want > 1e-9 {
		t.Errorf("time to train %v s, want %v s", got, want)
	}
}

func TestExpectInterruptedAddsPreemptions(t *testing.T) {
	// 2 preemptions an hour on top of the failures: the rate is their sum,
	// Daly's interval is over that sum, and the goodput falls.
	job := Job{TokensPerSecond: 1e7, Checkpoint: 1e12}
	base := Expect(job, 9216, 2304, 1e12)
	e := ExpectInterrupted(job, 9216, 2304, 1e12, 2)
	if want := base.FailuresPerHour + 2; math.Abs(e.FailuresPerHour-want)/want > 1e-12 {
		t.Errorf("interruptions per hour %v, want %v", e.FailuresPerHour, want)
	}
	mtbf := time.Duration(float64(time.Hour) / e.FailuresPerHour)
	if e.Interval != Daly(e.Save, mtbf) {
		t.Errorf("interval %v, want Daly's %v", e.Interval, Daly(e.Save, mtbf))
	}
	if g := ExpectedGoodput(e.Interval, e.Save, e.Restart, e.FailuresPerHour); g != e.Goodput || g >= base.Goodput {
		t.Errorf("goodput %v (by formula %v), want below %v without preemptions", e.Goodput, g, base.Goodput)
	}
	if z := ExpectInterrupted(job, 9216, 2304, 1e12, 0); z != base {
		t.Errorf("ExpectInterrupted(..., 0) = %+v, want Expect's %+v", z, base)
	}
}

func TestExpectBeyondDurationRange(t *testing.T) {
	// time.Duration ends at 2^63 ns, 9.22e9 s (292 years). A job of 1 token
	// a second takes tokens/goodput seconds: 1e6 tokens well inside that
	// range, 9.2e9 tokens at its end, 1e16 tokens (budget's largest, 317
	// million years at this rate) far beyond; each must be the same
	// formula's positive answer, and time must scale with tokens.
	job := Job{TokensPerSecond: 1, Checkpoint: 1e12}
	first := Expect(job, 9216, 2304, 1e6)
	for _, tokens := range []float64{1e6, 9.2e9, 1e16} {
		e := Expect(job, 9216, 2304, tokens)
		want := tokens / e.Goodput / 3600
		if got := e.TimeToTrain.Hours(); !(got > 0) || math.Abs(got-want)/want > 1e-12 {
			t.Errorf("%g tokens at 1 token/s, goodput %v: time to train %v hours, want %v", tokens, e.Goodput, got, want)
		}
		if got, want := e.TimeToTrain.Hours()/first.TimeToTrain.Hours(), tokens/1e6; math.Abs(got-want)/want > 1e-12 {
			t.Errorf("%g tokens take %v times as long as 1e6, want %v", tokens, got, want)
		}
	}
}

// TestExpectRunIsExpect: the expectation of a simulated run at the default
// rates, durations and storage bandwidth, checkpointing at Daly's interval,
// is Expect's for the same job on the same chips and hosts (capacity's
// expected time to train is plan --goodput's and budget's), and the
// simulation's mean over seeds agrees with it within four standard errors
// where spares are always at hand.
func TestExpectRunIsExpect(t *testing.T) {
	s, err := hw.ParseTPU("tpu7x-512") // 256 chips, 4 sub-blocks, 64 hosts
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(s.Chip, AllCapacity, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Place(r, s, 2, 100)
	if err != nil {
		t.Fatal(err)
	}
	job := Job{TokensPerSecond: 1.37e6, Checkpoint: 788 << 30}
	e := Expect(job, 512, 128, 1e12)
	save := CheckpointTime(job.Checkpoint, 128, DefaultStoragePerHost)
	mtbf := time.Duration(float64(time.Hour) / JobFailureRate(p, DefaultChipFailuresPerHour))
	c := Config{ChipFailuresPerHour: DefaultChipFailuresPerHour, Repair: time.Minute, Recovery: DefaultRecovery, Startup: DefaultStartup,
		Save: save, Restore: save, Interval: Daly(save, mtbf), Horizon: 365 * day}
	if got := ExpectRun(p, c); got != e.Goodput {
		t.Errorf("ExpectRun = %v, want Expect's %v", got, e.Goodput)
	}
	got, se := meanGoodput(t, p, c, 20)
	t.Logf("simulated %.5f ± %.5f, expected %.5f", got, se, e.Goodput)
	if math.Abs(got-e.Goodput) > 4*se {
		t.Errorf("mean goodput %.5f ± %.5f (20 seeds), want %.5f within 4 standard errors", got, se, e.Goodput)
	}
}
