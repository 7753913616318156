package inference

import (
	"fmt"
	"time"
)

// Checking a plan against its simulation. Under a request rate the plan
// says its layout keeps up: it serves the offered tokens/s at the TTFT
// and mean step of its steady state (AtRate). Simulate serves the same
// requests, drawn from the same lengths (Request.Lengths), one step at a
// time, and measures what a benchmark client would. Where it serves far
// less, the plan's steady state does not hold for these requests.

// SimShortfall is the least share of a keeping-up server's throughput
// a simulation may serve before SimMisses says the plan does not hold:
// below it the simulation's queue grows instead of settling.
const SimShortfall = 0.9

// SimTTFTFactor is how many times the plan's TTFT at the load the
// simulation's mean TTFT may reach before SimMisses says the plan does
// not hold: a queue that grows through the run multiplies the wait,
// while a settled one stays near the steady state's mean.
const SimTTFTFactor = 3

// SimMisses says where s, the simulation of p's chosen layout, serves
// far less than p says: under a request rate, output tokens/s below
// SimShortfall of what a server that keeps up would measure over the
// same requests, or a mean TTFT above SimTTFTFactor times the plan's at
// the load (Request.Seen). A server that keeps up has finished every
// request by the last arrival plus the longest request's time in it at
// the plan's steady state (its TTFT at the load, then its output tokens
// at the mean step), so that is the duration the throughput is held to:
// the arrivals' span alone would be overrun by a short run's last
// requests, and a mix's long requests outlast its mean one. Nil at a
// fixed concurrency, where the plan claims no offered load, or when s
// served nothing.
func (p Plan) SimMisses(s SimResult) []string {
	r, b := p.Request, p.Best
	ttft, _ := r.Seen(b)
	if r.RequestRate <= 0 || s.Requests == 0 || s.Duration <= 0 || b.MeanStep <= 0 {
		return nil
	}
	var out []string
	longest := ttft + time.Duration(r.Lengths().longestOutput())*b.MeanStep
	keepUp := s.LastArrival + longest
	if share := keepUp.Seconds() / s.Duration.Seconds(); share < SimShortfall {
		out = append(out, fmt.Sprintf("the simulation serves %.0f output tokens/s, %.0f%% of the %.0f a server that keeps up would (its %d requests took %v; arriving over %v, the longest %v in the server at the plan's steady state, they would take %v): the plan's steady state does not hold for these requests",
			s.TokensPerSecond, 100*share, s.TokensPerSecond/share, s.Requests, secs(s.Duration), secs(s.LastArrival), secs(longest), secs(keepUp)))
	}
	if ttft > 0 && s.TTFT.Mean > SimTTFTFactor*ttft {
		out = append(out, fmt.Sprintf("the simulation's mean TTFT is %v, %.1f times the plan's %v at the load: its requests queue",
			secs(s.TTFT.Mean), s.TTFT.Mean.Seconds()/ttft.Seconds(), secs(ttft)))
	}
	return out
}
