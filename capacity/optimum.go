package capacity

import (
	"math"
	"time"
)

// OptimumSeeds is how many seeds Optimize averages each interval over:
// the seed asked for and the next seven.
const OptimumSeeds = 8

// optimumSteps is the grid's points on each side of its centre, and
// optimumSpan how far its ends lie from it: the centre × 2^(k/3) for k
// from −9 to 9, three points a doubling from an eighth of the centre to
// eight times it, the centre among them.
const (
	optimumSteps = 9
	optimumSpan  = 8
)

// Edge is where an Optimum's best interval lies on the grid it searched.
type Edge string

const (
	Inside  Edge = ""        // between the grid's ends
	Floor   Edge = "floor"   // at its shortest interval: the best may be shorter
	Ceiling Edge = "ceiling" // at its longest: the best may be longer
)

// Optimum is the checkpoint interval whose mean simulated goodput over
// OptimumSeeds seeds is the best of a geometric grid centred on Daly's
// interval for the job (Intervals), or, with no failures, on the
// horizon; Optimize finds it.
type Optimum struct {
	// Interval is the best point of the grid and Goodput its mean
	// goodput; Interval is 0 where no point keeps any work (Goodput 0
	// at every one).
	Interval time.Duration
	Goodput  float64
	Seeds    int
	// Centre is the interval the grid is centred on, Low and High its
	// ends after clamping (Clamp), Points how many intervals it has.
	Centre, Low, High time.Duration
	Points            int
	// centreName says what Centre is: Daly's interval, or the horizon.
	centreName string
	// Edge is where Interval lies on the grid, and Bound what that end
	// is: "Daly's interval ÷ 8", "the checkpoint save time", "the
	// horizon", ...; "" inside. Clamped is whether that end is a clamp
	// (the horizon, the save, 1 s), past which no sensible interval lies;
	// at an end of the grid's own (Daly's interval × or ÷ 8) the optimum
	// may lie past it.
	Edge    Edge
	Bound   string
	Clamped bool
}

// Intervals are Young's and Daly's checkpoint intervals for the job p
// runs under cfg: its failure rate (JobFailureRate, its mean time between
// failures capped at MaxHorizon) and cfg.Save. With no failures they have
// no finite value (√(2·C·M) for an infinite M) and are 0.
func Intervals(p Placement, cfg Config) (young, daly time.Duration) {
	lambda := JobFailureRate(p, cfg.ChipFailuresPerHour)
	if lambda == 0 {
		return 0, 0
	}
	mtbf := time.Duration(math.Min(float64(MaxHorizon), float64(time.Hour)/lambda))
	return Young(cfg.Save, mtbf), Daly(cfg.Save, mtbf)
}

// Optimize simulates p under cfg at each interval of the grid, each over
// OptimumSeeds seeds from cfg.Seed, and returns the best. The grid is
// centred on Daly's interval (the horizon with no failures) and spans
// optimumSpan times either way, clamped to the intervals that make sense:
// no shorter than the checkpoint save (a job that saves more than it
// works), nor than the 1 s the simulation takes, nor longer than the
// horizon. A best point at an end of the grid is named as such (Edge,
// Bound): unless that end is a clamp (Clamped), the optimum may lie past
// it. Where no point keeps any work, Interval is 0. The grid has at most
// 19 points: 152 simulations. progress, when not nil, is called
// before each interval with the intervals done and the grid's size.
func Optimize(p Placement, cfg Config, progress func(done, total int)) (Optimum, error) {
	grid, o := optimumGrid(p, cfg)
	best := -1.0
	for i, iv := range grid {
		if progress != nil {
			progress(i, len(grid))
		}
		g, err := seedsGoodput(p, cfg, iv)
		if err != nil {
			return Optimum{}, err
		}
		if g > best {
			best, o.Interval = g, iv
		}
	}
	o.Goodput = best
	switch {
	case best <= 0:
		o.Interval = 0
	case o.Interval == o.High:
		o.Edge = Ceiling
	case o.Interval == o.Low:
		o.Edge = Floor
	}
	if o.Edge != Inside {
		o.Bound, o.Clamped = o.bound(o.Edge, cfg)
	}
	return o, nil
}

// optimumGrid is the intervals Optimize simulates, shortest first, and
// the Optimum with the grid's centre, ends and size.
func optimumGrid(p Placement, cfg Config) ([]time.Duration, Optimum) {
	_, centre := Intervals(p, cfg)
	name := "Daly's interval"
	if centre == 0 {
		centre, name = cfg.Horizon, "the horizon"
	}
	hi := cfg.Horizon
	lo := min(max(time.Second, cfg.Save), hi)
	var grid []time.Duration
	for k := -optimumSteps; k <= optimumSteps; k++ {
		iv := time.Duration(float64(centre) * math.Pow(optimumSpan, float64(k)/optimumSteps))
		iv = min(max(iv, lo), hi)
		if len(grid) == 0 || iv != grid[len(grid)-1] {
			grid = append(grid, iv)
		}
	}
	return grid, Optimum{Seeds: OptimumSeeds, Centre: centre, centreName: name, Low: grid[0], High: grid[len(grid)-1], Points: len(grid)}
}

// bound names the grid's end at edge, and whether it is a clamp: the
// horizon, the checkpoint save, the simulation's 1 s; else the centre
// times or over optimumSpan.
func (o Optimum) bound(edge Edge, cfg Config) (string, bool) {
	switch {
	case edge == Ceiling && o.High == cfg.Horizon:
		return "the horizon", true
	case edge == Ceiling:
		return o.centreName + " × 8", false
	case o.Low == time.Second && cfg.Save <= time.Second:
		return "1s, the shortest interval simulated", true
	case o.Low == cfg.Save:
		return "the checkpoint save time", true
	}
	return o.centreName + " ÷ 8", false
}

// seedsGoodput is the mean simulated goodput of p under cfg at interval
// iv over OptimumSeeds seeds from cfg.Seed.
func seedsGoodput(p Placement, cfg Config, iv time.Duration) (float64, error) {
	cfg.Interval = iv
	seed, sum := cfg.Seed, 0.0
	for s := range uint64(OptimumSeeds) {
		cfg.Seed = seed + s
		r, err := Run(p, cfg)
		if err != nil {
			return 0, err
		}
		sum += r.Goodput()
	}
	return sum / OptimumSeeds, nil
}
