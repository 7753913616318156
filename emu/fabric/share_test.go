package fabric

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"shardlab/collective"
)

// fakeProc is one of several "processes" in this one, joined as a
// transport joins real ones (Remote): its fabric runs devices
// [rank·per, (rank+1)·per), messages to the others are copied into their
// fabrics, and with share it is a Sharer whose shared memory is a slice
// every fakeProc can read, as the MPI transport's arenas are.
type fakeProc struct {
	rank, per int
	procs     []*fakeProc
	fab       *Fabric
	share     bool
	mu        sync.Mutex
	arena     []float32
	next      int
	lent      int64 // floats lent in place
}

func (p *fakeProc) Rank() int                              { return p.rank }
func (p *fakeProc) Size() int                              { return len(p.procs) }
func (p *fakeProc) RankOf(d int) int                       { return d / p.per }
func (p *fakeProc) MaxFloat64([]float64) error             { return nil }
func (p *fakeProc) SumFloat64([]float64) error             { return nil }
func (p *fakeProc) GatherBytes(b []byte) ([][]byte, error) { return [][]byte{b}, nil }
func (p *fakeProc) Attach(f *Fabric)                       { p.fab = f }
func (p *fakeProc) Shares(r int) bool                      { return p.share && r != p.rank }

func (p *fakeProc) Send(src, dst int, data []float32, clock float64, control bool) {
	to := p.procs[p.RankOf(dst)].fab
	var buf []float32
	if len(data) > 0 {
		buf = to.Buffer(src, dst, len(data))
		copy(buf, data)
	}
	to.Deliver(src, dst, buf, clock, control)
}

func (p *fakeProc) Alloc(n int) []float32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.share || p.next+n > len(p.arena) {
		return nil
	}
	b := p.arena[p.next : p.next+n : p.next+n]
	p.next += n
	return b
}

// owns reports whether data lies in p's shared memory.
func (p *fakeProc) owns(data []float32) bool {
	if len(data) == 0 || len(p.arena) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(&p.arena[0]))
	d := uintptr(unsafe.Pointer(&data[0]))
	return d >= lo && d+uintptr(len(data))*4 <= lo+uintptr(len(p.arena))*4
}

type returnTo struct {
	fab *Fabric
	src int
}

func (r returnTo) Done() { r.fab.Returned(r.src) }

func (p *fakeProc) Lend(src, dst int, data []float32, clock float64) bool {
	if !p.owns(data) {
		return false
	}
	p.mu.Lock()
	p.lent += int64(len(data))
	p.mu.Unlock()
	p.procs[p.RankOf(dst)].fab.DeliverView(src, dst, data, clock, returnTo{p.fab, src})
	return true
}

// allReduceAcross all-reduces one buffer per device over a flat group of
// n devices, per to a process, each fakeProc with its own fabric; device i
// takes its buffer from the shared memory (Fabric.Alloc) when inArena(i).
// It returns the buffers, what each device counted, and the floats lent in
// place.
func allReduceAcross(t *testing.T, in [][]float32, per int, share bool, inArena func(int) bool) ([][]float32, []collective.Counter, int64) {
	t.Helper()
	n := len(in)
	procs := make([]*fakeProc, n/per)
	for r := range procs {
		procs[r] = &fakeProc{rank: r, per: per, procs: procs, share: share, arena: make([]float32, 1<<16)}
		f := New(make([]int, n))
		f.SetRemote(procs[r])
		procs[r].Attach(f)
	}
	g := collective.Group{NICI: n, NDCN: 1, ICILink: collective.Link{Bandwidth: 1e11}}
	for i := range n {
		g.Ranks = append(g.Ranks, i)
	}
	bufs := make([][]float32, n)
	for i := range n {
		if inArena(i) {
			bufs[i] = procs[i/per].fab.Alloc(len(in[i]))
		} else {
			bufs[i] = make([]float32, len(in[i]))
		}
		copy(bufs[i], in[i])
	}
	sent := make([]collective.Counter, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			e := procs[i/per].fab.Endpoint(i)
			e.AllReduce(g, bufs[i])
			sent[i] = e.Sent()
		})
	}
	wg.Wait()
	var lent int64
	for _, p := range procs {
		lent += p.lent
	}
	return bufs, sent, lent
}

// TestSharedAcrossProcesses: devices of different processes that share
// memory (Sharer) all-reduce with the same bits and byte counts as in one
// process, whether their buffers lie in the shared memory (lent in place)
// or not (copies), one device's only (a pair where one side lends in place
// and the other a copy), and without a Sharer; lent in place, a two-member
// all-reduce lends each device's half, and a ring every chunk it sends.
func TestSharedAcrossProcesses(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ n, per, l int }{{2, 1, 1001}, {4, 2, 4099}, {4, 1, 64}} {
		in := make([][]float32, c.n)
		for i := range in {
			in[i] = make([]float32, c.l)
			for j := range in[i] {
				in[i][j] = float32(rng.NormFloat64())
			}
		}
		none := func(int) bool { return false }
		want, wantSent, _ := allReduceAcross(t, in, c.n, false, none) // one process
		for _, v := range []struct {
			name    string
			share   bool
			inArena func(int) bool
		}{{"all lent in place", true, func(int) bool { return true }}, {"all copied", true, none},
			{"device 0's lent in place", true, func(i int) bool { return i == 0 }}, {"no sharing", false, none}} {
			got, sent, lent := allReduceAcross(t, in, c.per, v.share, v.inArena)
			for i := range got {
				if !slices.Equal(got[i], want[i]) {
					t.Fatalf("n %d per %d %s: device %d's sum differs from one process's", c.n, c.per, v.name, i)
				}
				if s := sent[i]["all-reduce"]; s != wantSent[i]["all-reduce"] {
					t.Errorf("n %d per %d %s: device %d counted %v, in one process %v", c.n, c.per, v.name, i, s, wantSent[i]["all-reduce"])
				}
			}
			// a ring's member lends n−1 chunks in each of its two phases,
			// a pair's its peer's half; only those to another process are
			// lent through the Sharer
			var wantLent int64
			for i := range c.n {
				if v.share && v.inArena(i) {
					if c.n == 2 {
						lo, hi := chunk(c.l, 2, 1-i)
						wantLent += int64(hi - lo)
						continue
					}
					if next := (i + 1) % c.n; next/c.per != i/c.per {
						wantLent += 2 * int64(c.l-c.l/c.n) // all chunks but one, twice, within rounding
					}
				}
			}
			if d := lent - wantLent; d < -int64(2*c.n) || d > int64(2*c.n) {
				t.Errorf("n %d per %d %s: %d floats lent in place, want %d", c.n, c.per, v.name, lent, wantLent)
			}
		}
	}
}
