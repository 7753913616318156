package schedule

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"shardlab/internal/golden"
)

func TestBubbleMatchesFormula(t *testing.T) {
	// Narayanan et al. 2021 (Megatron-LM, SC'21) §2.2: GPipe and 1F1B both idle
	// (p−1)/(m+p−1) of the step. §2.2.2: with v chunks per device the bubble
	// is (1/v)·(p−1)/m of the ideal time, that is (p−1)/(v·m+p−1) of the step;
	// MaxText's circular pipeline runs m·v + p − 1 loop iterations of which
	// p − 1 are fill and drain: the same fraction.
	for _, k := range Kinds() {
		for _, p := range []int{1, 2, 3, 4, 8} {
			for _, m := range []int{1, 2, 4, 7, 8, 16, 24} {
				for _, v := range []int{1, 2, 3, 4} {
					if (k.Chunked() != (v > 1)) || (k.Chunked() && m%p != 0) {
						continue
					}
					got, err := BubbleChunked(k, p, m, v)
					if err != nil {
						t.Fatal(err)
					}
					want := float64(p-1) / float64(v*m+p-1)
					if math.Abs(got-want) > 1e-12 {
						t.Errorf("Bubble(%s, p=%d, m=%d, v=%d) = %v, want %v", k, p, m, v, got, want)
					}
				}
			}
		}
	}
}

func TestPeakInFlight(t *testing.T) {
	// GPipe holds all m micro-batches on every stage; 1F1B holds at most
	// p−s on stage s (Narayanan et al. 2021 §2.2), so the first stage holds
	// p. Interleaved device d holds its warm-up forwards plus one, in
	// chunks: (p−d−1)·2 + (v−1)·p + 1 (Megatron's warm-up count); circular,
	// every forward of the step: m·v chunks.
	const p, m, v = 4, 8, 2
	for _, k := range Kinds() {
		c := 1
		if k.Chunked() {
			c = v
		}
		s, err := NewChunked(k, p, m, c)
		if err != nil {
			t.Fatal(err)
		}
		tl := s.Simulate(1, 2, 0)
		for st := range p {
			var want int
			switch k {
			case GPipe:
				want = m
			case OneFOneB:
				want = min(p-st, m)
			case Interleaved:
				want = min((p-st-1)*2+(v-1)*p+1, m*v)
			case Circular:
				want = m * v
			}
			if tl.PeakInFlight[st] != want {
				t.Errorf("%s stage %d holds %d micro-batch chunks, want %d", k, st, tl.PeakInFlight[st], want)
			}
		}
	}
}

func TestTranscripts(t *testing.T) {
	// Hand-checked op lists and timelines (fwd 1, bwd 2 time units, free
	// sends), rewritten with -update and read before committing.
	for _, c := range []struct {
		k       Kind
		p, m, v int
	}{{GPipe, 3, 4, 1}, {OneFOneB, 3, 4, 1}, {Interleaved, 2, 4, 2}, {Interleaved, 3, 3, 2}, {Circular, 2, 4, 2}, {Circular, 3, 6, 2}} {
		s, err := NewChunked(c.k, c.p, c.m, c.v)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s, %d devices, %d micro-batches, %d chunks per device\n", c.k, c.p, c.m, c.v)
		for d, ops := range s.Ops {
			fmt.Fprintf(&b, "device %d ops %v\n", d, ops)
		}
		tl := s.Simulate(1, 2, 0)
		b.WriteString(tl.Render(1 / float64(c.v)))
		fmt.Fprintf(&b, "bubble %.4f, in flight %v\n", tl.Bubble(), tl.PeakInFlight)
		golden.Compare(t, fmt.Sprintf("%s_p%d_m%d_v%d", c.k, c.p, c.m, c.v), []byte(b.String()))
	}
}

func TestDepsAreAcyclicAndComplete(t *testing.T) {
	// Every op of every kind waits only for ops that some device runs, and
	// the simulation finishes (a deadlock panics).
	for _, k := range Kinds() {
		for _, v := range []int{1, 2, 4} {
			if k.Chunked() != (v > 1) {
				continue
			}
			s, err := NewChunked(k, 4, 8, v)
			if err != nil {
				t.Fatal(err)
			}
			runs := map[[2]int]map[Op]bool{}
			for d, ops := range s.Ops {
				for _, op := range ops {
					if runs[[2]int{d}] == nil {
						runs[[2]int{d}] = map[Op]bool{}
					}
					runs[[2]int{d}][op] = true
				}
			}
			for d, ops := range s.Ops {
				for _, op := range ops {
					for _, dep := range s.Deps(d, op) {
						if !runs[[2]int{dep.Device}][dep.Op] {
							t.Errorf("%s v=%d: device %d's %v waits for %v on device %d, which nobody runs", k, v, d, op, dep.Op, dep.Device)
						}
					}
				}
			}
			_ = s.Simulate(1, 2, 0.1)
		}
	}
}

func TestOpLists(t *testing.T) {
	s, _ := New(OneFOneB, 3, 4)
	want := []string{
		"[F0 F1 F2 B0 F3 B1 B2 B3]",
		"[F0 F1 B0 F2 B1 F3 B2 B3]",
		"[F0 B0 F1 B1 F2 B2 F3 B3]",
	}
	for st, ops := range s.Ops {
		if got := fmt.Sprint(ops); got != want[st] {
			t.Errorf("1F1B stage %d = %s, want %s", st, got, want[st])
		}
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		k    Kind
		p, m int
		v    int
	}{{GPipe, 0, 1, 1}, {GPipe, 2, 0, 1}, {"zb", 2, 2, 1}, {GPipe, 2, 2, 2}, {Interleaved, 2, 2, 1}, {Interleaved, 4, 6, 2}, {Circular, 2, 2, 0}, {Circular, 4, 2, 2}} {
		if _, err := NewChunked(c.k, c.p, c.m, c.v); err == nil {
			t.Errorf("NewChunked(%s, %d, %d, %d) accepted", c.k, c.p, c.m, c.v)
		}
	}
	if _, err := ParseKind("zero-bubble"); err == nil {
		t.Error("ParseKind(zero-bubble) accepted")
	}
}

func TestSendDelaysTheFill(t *testing.T) {
	// With a send of d units between stages, the last stage starts its first
	// forward (p−1)(fwd+d) late, and the first stage finishes its last
	// backward (p−1)·d later than with free sends: the makespan grows by
	// 2(p−1)·d.
	s, _ := New(GPipe, 4, 4)
	a, b := s.Simulate(1, 2, 0), s.Simulate(1, 2, 0.5)
	if got := b.Makespan - a.Makespan; got != 2*3*0.5 {
		t.Errorf("makespan grew by %v, want 3", got)
	}
}

func ExampleSchedule_Simulate() {
	s, _ := New(OneFOneB, 4, 4)
	tl := s.Simulate(1, 2, 0)
	fmt.Print(tl.Render(1))
	fmt.Printf("bubble %.3f\n", tl.Bubble())
	// Output:
	// stage 0 |0123......aa.bb.cc.dd|
	// stage 1 |.012....aa3bb.cc.dd..|
	// stage 2 |..01..aa2bb3cc.dd....|
	// stage 3 |...0aa1bb2cc3dd......|
	// bubble 0.429
}

// TestKindIndex: Index is each schedule's place in Kinds (the pipeline
// cache's key in cost), and -1 for a name that is no schedule.
func TestKindIndex(t *testing.T) {
	for i, k := range Kinds() {
		if got := k.Index(); got != i {
			t.Errorf("%q.Index() = %d, want %d", k, got, i)
		}
	}
	if got := Kind("zigzag").Index(); got != -1 {
		t.Errorf("zigzag.Index() = %d, want -1", got)
	}
	ks := Kinds()
	ks[0] = "changed"
	if Kinds()[0] != GPipe {
		t.Error("Kinds shares its array with its callers")
	}
}
