package capacity

import (
	"math"
	"time"

	"shardlab/unit"
)

// JobFailureRate is how often the job is interrupted by failures, per hour:
// every sub-block it uses fails at the chip rate times its chips.
func JobFailureRate(p Placement, chipFailuresPerHour float64) float64 {
	return chipFailuresPerHour * float64(p.Used*p.Reservation.Hierarchy.SubBlockChips())
}

// Young is the checkpoint interval that maximises goodput to first order:
// √(2·C·M) for a checkpoint cost C and a mean time between failures M
// (J. W. Young, "A first order approximation to the optimum checkpoint
// interval", CACM 17(9), 1974).
func Young(save, mtbf time.Duration) time.Duration {
	return time.Duration(math.Sqrt(2 * float64(save) * float64(mtbf)))
}

// Daly is Young's interval with Daly's higher-order terms: for C < 2M,
// √(2CM)·(1 + √(C/2M)/3 + (C/2M)/9) − C, else M (J. T. Daly, "A higher
// order estimate of the optimum checkpoint interval for restart dumps",
// FGCS 22(3), 2006, eq. 37).
func Daly(save, mtbf time.Duration) time.Duration {
	c, m := float64(save), float64(mtbf)
	if c >= 2*m {
		return mtbf
	}
	x := c / (2 * m)
	return time.Duration(math.Sqrt(2*c*m)*(1+math.Sqrt(x)/3+x/9) - c)
}

// ExpectedGoodput is the renewal-reward goodput of a job that checkpoints
// every interval of work at cost save, fails at rate perHour (during work,
// saves and restarts alike), and after each failure spends restart (not
// lost to a further failure only if none strikes in it) before working
// again from the last checkpoint, with spares always at hand. A segment of
// W = T + C takes e^{λR}(e^{λW} − 1)/λ on average, of which T is kept.
func ExpectedGoodput(interval, save, restart time.Duration, perHour float64) float64 {
	l := perHour / float64(time.Hour)
	if l == 0 {
		return float64(interval) / float64(interval+save)
	}
	w := float64(interval + save)
	e := math.Exp(l*float64(restart)) * math.Expm1(l*w) / l
	return float64(interval) / e
}

// ExpectRun is the renewal-reward goodput (ExpectedGoodput) of the job Run
// simulates for p under cfg: failures at the job's rate (JobFailureRate),
// a checkpoint every cfg.Interval of work at cfg.Save, and each restart
// paying recovery, startup and a restore. It leaves out what only the
// simulation has: planned maintenance, and waiting for a spare (spares
// are taken to be at hand, as Expect takes them), so with the default
// rates, durations and Daly's interval it is Expect's goodput for the
// same job. It does not depend on cfg.Seed or cfg.Horizon.
func ExpectRun(p Placement, cfg Config) float64 {
	restart := cfg.Recovery + cfg.Startup + cfg.Restore
	return ExpectedGoodput(cfg.Interval, cfg.Save, restart, JobFailureRate(p, cfg.ChipFailuresPerHour))
}

// Availability is the steady-state fraction of time a sub-block is healthy
// when it fails at rate perHour and takes repair on average to return:
// 1 / (1 + λ·MTTR).
func Availability(perHour float64, repair time.Duration) float64 {
	return 1 / (1 + perHour*repair.Hours())
}

// binomialAtLeast is P(X >= k) for X ~ Binomial(n, p).
func binomialAtLeast(n, k int, p float64) float64 {
	if k <= 0 {
		return 1
	}
	if k > n {
		return 0
	}
	if p >= 1 {
		return 1
	}
	if p <= 0 {
		return 0
	}
	lgn, _ := math.Lgamma(float64(n + 1))
	sum := 0.0
	for i := k; i <= n; i++ {
		a, _ := math.Lgamma(float64(i + 1))
		b, _ := math.Lgamma(float64(n - i + 1))
		sum += math.Exp(lgn - a - b + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p))
	}
	return min(sum, 1)
}

// HealthyAt is the most sub-blocks (cubes) of n that are healthy at once
// with probability at least conf, each healthy independently with
// probability p.
func HealthyAt(n int, p, conf float64) int {
	for k := n; k > 0; k-- {
		if binomialAtLeast(n, k, p) >= conf {
			return k
		}
	}
	return 0
}

// SparesFor is the fewest spare sub-blocks that keep need sub-blocks
// healthy with probability at least conf; -1 if no number up to limit
// does.
func SparesFor(need int, p, conf float64, limit int) int {
	for s := 0; s <= limit; s++ {
		if binomialAtLeast(need+s, need, p) >= conf {
			return s
		}
	}
	return -1
}

// Expectation is the analytic goodput of a job on its chips, before any
// reservation is chosen: failures at the default chip rate over all its
// chips, spares always at hand (managed capacity replaces a failed
// machine), checkpoints written and read by every host in parallel at the
// default storage bandwidth, each restart paying recovery, startup and a
// restore, and Daly's checkpoint interval.
type Expectation struct {
	FailuresPerHour float64       `json:"job_failures_per_hour"`
	Save            time.Duration `json:"-"`
	Restart         time.Duration `json:"-"`
	Interval        time.Duration `json:"-"`
	Goodput         float64       `json:"goodput_fraction"`
	// TimeToTrain is the wall-clock time to train Tokens tokens, in the
	// job's whole steps (Job.TimeToTrain), at the job's throughput times
	// the goodput, in float seconds: a legitimate
	// question (1e16 tokens on one small slice) takes thousands of years,
	// past time.Duration's 292.
	Tokens      float64      `json:"tokens"`
	TimeToTrain unit.Seconds `json:"-"`
}

// Expect computes the expectation for job on chips chips and hosts hosts,
// to train tokens tokens.
func Expect(job Job, chips, hosts int, tokens float64) Expectation {
	return ExpectInterrupted(job, chips, hosts, tokens, 0)
}

// ExpectInterrupted is Expect with interruptions beyond hardware failures,
// such as spot preemptions, at extraPerHour for the whole job: each one
// costs a restart and the work since the last checkpoint, like a failure,
// and Daly's interval is taken over both rates.
func ExpectInterrupted(job Job, chips, hosts int, tokens, extraPerHour float64) Expectation {
	rate := DefaultChipFailuresPerHour*float64(chips) + max(extraPerHour, 0)
	save := CheckpointTime(job.Checkpoint, hosts, DefaultStoragePerHost)
	restart := DefaultRecovery + DefaultStartup + save
	mtbf := time.Duration(float64(time.Hour) / rate)
	interval := Daly(save, mtbf)
	g := ExpectedGoodput(interval, save, restart, rate)
	e := Expectation{FailuresPerHour: rate, Save: save, Restart: restart, Interval: interval, Goodput: g, Tokens: tokens}
	if job.TokensPerSecond > 0 && g > 0 {
		e.TimeToTrain = job.TimeToTrain(tokens, g)
	}
	return e
}
