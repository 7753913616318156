// Package fabric is the emulator's interconnect: Fabric, the in-process
// transport with one FIFO per ordered pair of devices and a simulated
// clock per device; Endpoint, a device's collective.Comm on it, running
// ring and direct collectives and counting every byte by link tier;
// Remote and Sharer, which a transport between processes (package
// emu/mpi) implements; and the adapter from a placed mesh to the
// collectives' groups and links (layout.go). Package emu trains on it.
package fabric

import (
	"fmt"
	"sync"
	"time"

	"shardlab/collective"
	"shardlab/emu/kernel"
	"shardlab/hw"
	"shardlab/mesh"
)

// Remote carries messages between devices that live in different
// processes (package emu/mpi implements it over MPI). Incoming messages are
// handed to Fabric.Deliver.
type Remote interface {
	// Rank is this process, Size how many there are, RankOf the process
	// that runs a device.
	Rank() int
	Size() int
	RankOf(device int) int
	// Send ships data from device src to device dst on another process,
	// with the sender's simulated clock; control marks clock exchanges.
	Send(src, dst int, data []float32, clock float64, control bool)
	// MaxFloat64 and SumFloat64 reduce x over all processes, in place.
	MaxFloat64(x []float64) error
	SumFloat64(x []float64) error
	// GatherBytes collects every process's b at process 0, by rank.
	GatherBytes(b []byte) ([][]byte, error)
	// Attach starts delivering incoming messages to f.
	Attach(f *Fabric)
}

// Sharer is a Remote whose processes map each other's memory (ranks on one
// machine). A device then shows a device of another process a buffer in
// place, as a chip reads a peer's HBM by DMA over ICI, instead of sending
// it a copy: the peer reads the buffer (and, in a two-member all-reduce,
// writes the sum into it) and hands it back.
type Sharer interface {
	// Shares reports whether this process and process rank map each
	// other's shared memory; the answer is the same on both sides.
	Shares(rank int) bool
	// Alloc returns n floats of this process's shared memory, zeroed, or
	// nil when there is none left. They belong to the attached fabric: the
	// transport may hand them out again once another fabric attaches.
	Alloc(n int) []float32
	// Lend shows data to device dst of another process in place: the
	// transport delivers it there with DeliverView and, once dst hands it
	// back, calls Returned(src) here. It reports false, sending nothing,
	// when data does not lie in memory Alloc returned.
	Lend(src, dst int, data []float32, clock float64) bool
}

// Lender owns a buffer a device reads in place: Done hands it back.
type Lender interface{ Done() }

// Fabric is the in-process transport: one unbounded FIFO per ordered pair
// of devices, a slice id per device to class each message, and a simulated
// clock per device that collectives advance by package collective's cost.
type Fabric struct {
	n       int
	sliceOf []int
	mu      sync.Mutex
	queues  map[[2]int]*fifo
	failed  map[[2]int]bool
	clocks  []float64
	rv      map[string]*rendezvous
	// FreeComm makes communication take no simulated time (to measure a
	// pipeline's bubble alone).
	FreeComm bool
	// SendLink gives the link a point-to-point send (a pipeline stage's)
	// between two devices uses; without it a send takes no time.
	SendLink func(from, to int) collective.Link
	// remote carries messages to devices of other processes.
	remote Remote
	// eps is each local device's endpoint, for Returned
	eps map[int]*Endpoint
	// Trace makes every endpoint record its communication spans (Spans).
	Trace bool
	// waiting maps a blocked device to the device it waits on.
	waiting sync.Map
	// add sums a received chunk into a device's own (kernel.Add; the
	// benchmarks set the scalar loop of v1 to measure against it), and v1
	// makes two devices' all-reduce the plain ring of v1 too.
	add func(dst, x []float32)
	v1  bool
}

// Waiting lists, for every local device blocked on a message, the device
// it waits for (a watchdog uses it to name a dead peer).
func (f *Fabric) Waiting() map[int]int {
	out := map[int]int{}
	f.waiting.Range(func(k, v any) bool {
		out[int(k.(int64))] = v.(int)
		return true
	})
	return out
}

// SetRemote routes messages for devices of other processes through r.
func (f *Fabric) SetRemote(r Remote) { f.remote = r }

// Local reports whether device d runs in this process.
func (f *Fabric) Local(d int) bool { return f.remote == nil || f.remote.RankOf(d) == f.remote.Rank() }

// Buffer returns a buffer of n floats for a message from device src to
// device dst that arrived from another process: one dst has handed back
// after reading an earlier message, so that a transport can copy each
// arrival into reused memory, or a new one.
func (f *Fabric) Buffer(src, dst, n int) []float32 {
	q := f.queue(src, dst)
	q.mu.Lock()
	defer q.mu.Unlock()
	if k := len(q.free); k > 0 && cap(q.free[k-1]) >= n {
		buf := q.free[k-1][:n]
		q.free = q.free[:k-1]
		return buf
	}
	return make([]float32, n)
}

// Deliver enqueues a message that arrived from another process.
func (f *Fabric) Deliver(src, dst int, data []float32, clock float64, control bool) {
	f.enqueue(src, dst, Message{data: data, t: clock, control: control})
}

// DeliverView enqueues a message from another process whose data stays
// the sender's (Sharer.Lend): device dst reads it in place and then calls
// l.Done.
func (f *Fabric) DeliverView(src, dst int, data []float32, clock float64, l Lender) {
	f.enqueue(src, dst, Message{data: data, t: clock, lender: l})
}

// enqueue appends m to the queue from src to dst and wakes dst.
func (f *Fabric) enqueue(src, dst int, m Message) {
	q := f.queue(src, dst)
	q.mu.Lock()
	q.q = append(q.q, m)
	q.mu.Unlock()
	q.cond.Signal()
}

// Returned tells device src that a device of another process has handed
// back a buffer src lent it (Sharer.Lend).
func (f *Fabric) Returned(src int) {
	f.mu.Lock()
	e := f.eps[src]
	f.mu.Unlock()
	if e == nil {
		panic(fmt.Sprintf("fabric: a buffer lent by device %d came back, but the device has no endpoint here", src))
	}
	e.lent.Done()
}

// Alloc returns a buffer of n floats that devices of other processes can
// read in place when the transport shares memory (Sharer), else an
// ordinary one. Buffers a device sends again and again (its gradients)
// are worth taking from here.
func (f *Fabric) Alloc(n int) []float32 {
	if s, ok := f.remote.(Sharer); ok {
		if b := s.Alloc(n); b != nil {
			return b
		}
	}
	return make([]float32, n)
}

// sharer is the transport through which this process lends device to its
// buffers in place, or nil: to runs here, or in a process that does not
// map this one's memory.
func (f *Fabric) sharer(to int) Sharer {
	if f.Local(to) {
		return nil
	}
	if s, ok := f.remote.(Sharer); ok && s.Shares(f.remote.RankOf(to)) {
		return s
	}
	return nil
}

// allLocal reports whether every one of devices runs in this process.
func (f *Fabric) allLocal(devices []int) bool {
	for _, d := range devices {
		if !f.Local(d) {
			return false
		}
	}
	return true
}

type fifo struct {
	mu   sync.Mutex
	cond *sync.Cond
	q    []Message
	free [][]float32 // buffers the receiver has handed back, for reuse
}

// Message is a buffer in flight: a copy the receiver owns, or (lender
// set) a view of the sender's own buffer that the receiver reads in place
// and returns, as a peer read over NVLink or ICI DMA would.
type Message struct {
	data    []float32
	t       float64 // sender's clock when sent
	lender  Lender  // the sender's *sync.WaitGroup, or a transport's
	control bool    // a clock exchange, not data
}

// New connects n devices; sliceOf[i] is device i's slice.
func New(sliceOf []int) *Fabric {
	return &Fabric{n: len(sliceOf), sliceOf: sliceOf, queues: map[[2]int]*fifo{}, failed: map[[2]int]bool{},
		clocks: make([]float64, len(sliceOf)), rv: map[string]*rendezvous{}, add: kernel.Add, eps: map[int]*Endpoint{}}
}

// ForMesh connects m's devices: each in its slice, a point-to-point send
// between two of them over the link mesh gives the pair (SendLink).
func ForMesh(m mesh.Mesh) *Fabric {
	f := New(SliceOf(m))
	f.SendLink = func(from, to int) collective.Link { return m.PeerLink(from, to).Collective() }
	return f
}

// FailLink marks the link between devices a and b as broken.
func (f *Fabric) FailLink(a, b int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed[[2]int{a, b}] = true
	f.failed[[2]int{b, a}] = true
}

// ErrLinkDown is returned by Discover for a broken link.
type ErrLinkDown struct{ A, B int }

func (e *ErrLinkDown) Error() string {
	return fmt.Sprintf("fabric: mesh discovery failed: link %d-%d is down", e.A, e.B)
}

// RingLinks is every link the groups' rings use, both ways: the links of
// the layout.
func RingLinks(groups []collective.Group) map[[2]int]bool {
	used := map[[2]int]bool{}
	for _, g := range groups {
		for i, a := range g.Ranks {
			b := g.Ranks[(i+1)%len(g.Ranks)]
			used[[2]int{a, b}], used[[2]int{b, a}] = true, true
		}
	}
	return used
}

// Discover checks every link the groups' rings use, as ICI mesh discovery
// does at start-up, and names the first broken one (*ErrLinkDown)
// instead of hanging. A failed link that no ring uses is not checked: the
// caller refuses it first (RingLinks).
func (f *Fabric) Discover(groups []collective.Group) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, g := range groups {
		for i, a := range g.Ranks {
			b := g.Ranks[(i+1)%len(g.Ranks)]
			if a != b && f.failed[[2]int{a, b}] {
				return &ErrLinkDown{A: min(a, b), B: max(a, b)}
			}
		}
	}
	return nil
}

func (f *Fabric) queue(src, dst int) *fifo {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := [2]int{src, dst}
	q, ok := f.queues[k]
	if !ok {
		q = &fifo{}
		q.cond = sync.NewCond(&q.mu)
		f.queues[k] = q
	}
	return q
}

// Endpoint is device rank's collective.Comm on the fabric.
type Endpoint struct {
	f    *Fabric
	rank int
	axis string // the group of the collective under way
	op   string // and its name, for the trace
	// counted is the bytes sent, by collective and tier; byAxis counts
	// the same bytes under "axis op" (e.g. "tensor all-reduce").
	counted collective.Counter
	byAxis  collective.Counter
	spans   []Span
	lent    sync.WaitGroup // views of this device's buffers other devices still read
	// controlBytes counts the bytes of clock exchanges between
	// processes' devices (8 per message), apart from the collectives.
	controlBytes int64
}

// Endpoint returns device rank's Comm.
func (f *Fabric) Endpoint(rank int) *Endpoint {
	e := &Endpoint{f: f, rank: rank, counted: collective.Counter{}, byAxis: collective.Counter{}}
	f.mu.Lock()
	f.eps[rank] = e
	f.mu.Unlock()
	return e
}

// Span is a stretch of simulated time on one device's track.
type Span struct {
	Device int
	Name   string
	Start  float64 // seconds
	End    float64
}

// span records a stretch of the device's track when the fabric traces.
func (e *Endpoint) span(name string, start, end float64) {
	if e.f.Trace {
		e.spans = append(e.spans, Span{Device: e.rank, Name: name, Start: start, End: end})
	}
}

// Sent is the bytes this device has sent.
func (e *Endpoint) Sent() collective.Counter { return e.counted }

// SentByAxis is Sent under "axis op" keys (e.g. "tensor all-reduce").
func (e *Endpoint) SentByAxis() collective.Counter { return e.byAxis }

// ControlBytes is the bytes of the clock exchanges this device has sent
// to devices of other processes (8 a message), apart from Sent.
func (e *Endpoint) ControlBytes() int64 { return e.controlBytes }

// Spans is the device's communication spans, when the fabric traces.
func (e *Endpoint) Spans() []Span { return e.spans }

// Alloc is the fabric's Alloc: a buffer other processes' devices can read
// in place.
func (e *Endpoint) Alloc(n int) []float32 { return e.f.Alloc(n) }

// Rank is the device's id.
func (e *Endpoint) Rank() int { return e.rank }

// Clock is the device's simulated time in seconds.
func (e *Endpoint) Clock() float64 { return e.f.clocks[e.rank] }

// SetClock sets the device's simulated time (a restored checkpoint's).
func (e *Endpoint) SetClock(t float64) { e.f.clocks[e.rank] = t }

// Advance moves the device's clock on by d seconds of its own work.
func (e *Endpoint) Advance(d float64) { e.f.clocks[e.rank] += d }

func (e *Endpoint) tier(to int) hw.Tier {
	if e.f.sliceOf[to] == e.f.sliceOf[e.rank] {
		return hw.ICI
	}
	return hw.DCN
}

// count records n floats sent to device to under op and axis.
func (e *Endpoint) count(op, axis string, to, n int) {
	e.counted.Add(op, e.tier(to), int64(n)*4)
	e.byAxis.Add(axis+" "+op, e.tier(to), int64(n)*4)
}

// put sends a copy of x to device to, counting it under op and axis.
func (e *Endpoint) put(op, axis string, to int, x []float32) {
	e.count(op, axis, to, len(x))
	if !e.f.Local(to) {
		e.f.remote.Send(e.rank, to, x, e.f.clocks[e.rank], false)
		return
	}
	q := e.f.queue(e.rank, to)
	q.mu.Lock()
	var buf []float32
	if n := len(q.free); n > 0 && cap(q.free[n-1]) >= len(x) {
		buf, q.free = q.free[n-1][:len(x)], q.free[:n-1]
	} else {
		buf = make([]float32, len(x))
	}
	copy(buf, x)
	q.q = append(q.q, Message{data: buf, t: e.f.clocks[e.rank]})
	q.mu.Unlock()
	q.cond.Signal()
}

// lend sends x without copying it: the receiver reads it in place and
// hands it back; the sender must not write x until waitLent returns. To
// another process that is a view of shared memory (Sharer) when x lies
// in it, else a copy; lend reports whether it was a view.
func (e *Endpoint) lend(op, axis string, to int, x []float32) bool {
	if !e.f.Local(to) {
		if s := e.f.sharer(to); s != nil {
			e.lent.Add(1)
			if s.Lend(e.rank, to, x, e.f.clocks[e.rank]) {
				e.count(op, axis, to, len(x))
				return true
			}
			e.lent.Done()
		}
		e.put(op, axis, to, x)
		return false
	}
	e.count(op, axis, to, len(x))
	e.share(to, x)
	return true
}

// waitLent waits until every device x was lent to has handed it back;
// peer names the device to blame when it is of another process and never
// does (the transport's watchdog reads Waiting).
func (e *Endpoint) waitLent(peer int) {
	if !e.f.Local(peer) {
		e.f.waiting.Store(int64(e.rank), peer)
		defer e.f.waiting.Delete(int64(e.rank))
	}
	e.lent.Wait()
}

// release hands a received message back: a lent view to its sender, a
// copy to the queue's free list.
func (e *Endpoint) release(from int, m Message) {
	if m.lender != nil {
		m.lender.Done()
		return
	}
	e.recycle(from, m.data)
}

// recycle hands a received buffer back to its queue for the next message.
func (e *Endpoint) recycle(from int, buf []float32) {
	q := e.f.queue(from, e.rank)
	q.mu.Lock()
	if len(q.free) < 4 {
		q.free = append(q.free, buf)
	}
	q.mu.Unlock()
}

func (e *Endpoint) get(from int) Message {
	q := e.f.queue(from, e.rank)
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.q) == 0 {
		e.f.waiting.Store(int64(e.rank), from)
		defer e.f.waiting.Delete(int64(e.rank))
	}
	for len(q.q) == 0 {
		q.cond.Wait()
	}
	m := q.q[0]
	q.q = q.q[1:]
	return m
}

// Send is a point-to-point send (pipeline stages). The receiver's clock
// becomes at least the sender's plus the transfer time over the link
// the fabric's pp gives (no time without one).
func (e *Endpoint) Send(to int, x []float32) { e.put("send/recv", mesh.Pipeline.String(), to, x) }

// SendHead sends x to device to, a stage of the same pipeline, for the
// output layer and loss a GPipe or circular pipeline runs after its
// passes on every stage; it is counted apart from the passes' sends
// ("pipeline head send/recv"). Recv receives it.
func (e *Endpoint) SendHead(to int, x []float32) {
	e.put("head send/recv", mesh.Pipeline.String(), to, x)
}

// Recv receives from device from.
func (e *Endpoint) Recv(from int) []float32 { return e.Arrive(from, e.Take(from)) }

// Take waits for the next message from device from and returns it
// without taking delivery: a device that needs its messages in another
// order than they came keeps them, and Arrive delivers each when it is
// needed (Recv is Arrive of Take).
func (e *Endpoint) Take(from int) Message { return e.get(from) }

// Arrive takes delivery of message m from device from: the receiver's
// clock becomes at least the sender's plus the transfer time.
func (e *Endpoint) Arrive(from int, m Message) []float32 {
	x, sent := m.data, m.t
	d := 0.0
	if e.f.SendLink != nil && !e.f.FreeComm {
		d = collective.Time(collective.SendRecv, 2, unitBytes(len(x)), e.f.SendLink(from, e.rank)).Seconds()
	}
	now := e.f.clocks[e.rank]
	if sent > now { // waiting for the other stage: the pipeline bubble
		e.span("bubble", now, sent)
		now = sent
	}
	if end := sent + d; end > now {
		if e.f.Trace {
			e.span(fmt.Sprintf("recv from %d", from), now, end)
		}
		now = end
	}
	e.f.clocks[e.rank] = now
	return x
}

// rendezvous synchronises a group's clocks at a collective.
type rendezvous struct {
	mu      sync.Mutex
	cond    *sync.Cond
	arrived int
	round   int
	max     float64
	result  float64
}

// sync waits for every member of g, then sets each clock to the latest
// arrival plus cost.
func (e *Endpoint) sync(g collective.Group, cost time.Duration) {
	if g.Size() <= 1 {
		return
	}
	if e.f.remote != nil {
		e.syncByMessages(g, cost)
		return
	}
	key := fmt.Sprint(g.Ranks)
	e.f.mu.Lock()
	r, ok := e.f.rv[key]
	if !ok {
		r = &rendezvous{}
		r.cond = sync.NewCond(&r.mu)
		e.f.rv[key] = r
	}
	e.f.mu.Unlock()
	if e.f.FreeComm {
		cost = 0
	}
	r.mu.Lock()
	round := r.round
	r.max = max(r.max, e.f.clocks[e.rank])
	r.arrived++
	if r.arrived == g.Size() {
		r.result = r.max + cost.Seconds()
		r.arrived, r.max = 0, 0
		r.round++
		r.cond.Broadcast()
	}
	for r.round == round {
		r.cond.Wait()
	}
	t := r.result
	r.mu.Unlock()
	if start := e.f.clocks[e.rank]; t > start {
		if e.f.Trace {
			e.span(e.op+" ("+g.Axis+")", start, t)
		}
	}
	e.f.clocks[e.rank] = t
}

// syncByMessages is sync across processes: every member sends its clock to
// the group's first member, which answers with the latest plus cost.
// These control messages are counted apart from the collectives' bytes.
func (e *Endpoint) syncByMessages(g collective.Group, cost time.Duration) {
	if e.f.FreeComm {
		cost = 0
	}
	leader := g.Ranks[0]
	start := e.f.clocks[e.rank]
	var t float64
	if e.rank == leader {
		t = start
		for _, m := range g.Ranks[1:] {
			in := e.get(m)
			if !in.control {
				panic("fabric: data message where a clock was expected") // ordering bug
			}
			t = max(t, float64(in.t))
		}
		t += cost.Seconds()
		for _, m := range g.Ranks[1:] {
			e.control(m, t)
		}
	} else {
		e.control(leader, start)
		in := e.get(leader)
		if !in.control {
			panic("fabric: data message where a clock was expected")
		}
		t = in.t
	}
	if t > start {
		if e.f.Trace {
			e.span(e.op+" ("+g.Axis+")", start, t)
		}
	}
	e.f.clocks[e.rank] = t
}

// control sends a clock to device to.
func (e *Endpoint) control(to int, clock float64) {
	e.controlBytes += 8
	if !e.f.Local(to) {
		e.f.remote.Send(e.rank, to, nil, clock, true)
		return
	}
	e.f.enqueue(e.rank, to, Message{t: clock, control: true})
}

// Barrier waits for the group.
func (e *Endpoint) Barrier(g collective.Group) { e.sync(g, 0) }
