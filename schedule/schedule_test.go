package schedule

import (
	"fmt"
	"math"
	"testing"
)

func TestBubbleMatchesFormula(t *testing.T) {
	// Narayanan et al. 2021 (Megatron-LM, SC'21) §2.2: GPipe and 1F1B both idle
	// (p−1)/(m+p−1) of the step.
	for _, k := range Kinds() {
		for _, p := range []int{1, 2, 3, 4, 8, 16} {
			for _, m := range []int{1, 2, 4, 7, 16, 64} {
				got, err := Bubble(k, p, m)
				if err != nil {
					t.Fatal(err)
				}
				want := float64(p-1) / float64(m+p-1)
				if math.Abs(got-want) > 1e-12 {
					t.Errorf("Bubble(%s, p=%d, m=%d) = %v, want %v", k, p, m, got, want)
				}
			}
		}
	}
}

func TestPeakInFlight(t *testing.T) {
	// GPipe holds all m micro-batches on every stage; 1F1B holds at most
	// p−s on stage s (Narayanan et al. 2021 §2.2), so the first stage holds p.
	const p, m = 4, 8
	for _, k := range Kinds() {
		s, _ := New(k, p, m)
		tl := s.Simulate(1, 2, 0)
		for st := range p {
			want := m
			if k == OneFOneB {
				want = min(p-st, m)
			}
			if tl.PeakInFlight[st] != want {
				t.Errorf("%s stage %d holds %d micro-batches, want %d", k, st, tl.PeakInFlight[st], want)
			}
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
	}{{GPipe, 0, 1}, {GPipe, 2, 0}, {"zb", 2, 2}} {
		if _, err := New(c.k, c.p, c.m); err == nil {
			t.Errorf("New(%s, %d, %d) accepted", c.k, c.p, c.m)
		}
	}
	if _, err := ParseKind("interleaved"); err == nil {
		t.Error("ParseKind(interleaved) accepted")
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
