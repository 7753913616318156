//go:build mpi

package mpi

/*
#include <mpi.h>
#include <stdlib.h>
static int isend_f32b(float *buf, int n, int to, int tag, MPI_Request *req) { return MPI_Isend(buf, n, MPI_FLOAT, to, tag, MPI_COMM_WORLD, req); }
static int testb(MPI_Request *req, int *done) { return MPI_Test(req, done, MPI_STATUS_IGNORE); }
static int iprobeb(int *flag, int *src, int *tag, int *count) {
	MPI_Status st;
	int rc = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, flag, &st);
	if (rc == MPI_SUCCESS && *flag) { *src = st.MPI_SOURCE; *tag = st.MPI_TAG; MPI_Get_count(&st, MPI_FLOAT, count); }
	return rc;
}
static int recvb(float *buf, int n, int from, int tag) { return MPI_Recv(buf, n, MPI_FLOAT, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
static MPI_Request *new_req(void) { return (MPI_Request *)malloc(sizeof(MPI_Request)); }
static void free_req(MPI_Request *r) { free(r); }
*/
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"shardlab/emu/fabric"
)

// HeaderWords is the size of the header each device message carries in
// front of its payload: source and destination device, a control flag and
// the sender's clock (float64 as two words), 24 bytes.
const HeaderWords = 6

// tagData is the MPI tag of device messages.
const tagData = 7

// Transport carries emulator messages between processes over MPI: one MPI
// rank per host, devices numbered slice by slice and host by host, so rank
// r runs devices [r·perHost, (r+1)·perHost).
type Transport struct {
	w       *World
	perHost int
	fab     atomic.Pointer[fabric.Fabric]
	running bool
	out     chan outMsg
	stop    chan struct{}
	stopped chan struct{}
	// MessagesOut and BytesOut count what this process sent to other
	// processes, headers included: the numbers Open MPI's pml monitoring
	// reports.
	MessagesOut atomic.Int64
	BytesOut    atomic.Int64
	perPeer     []atomic.Int64
	// Timeout bounds how long a device waits on a silent peer: the
	// watchdog then sends a *StoppedError naming the rank on Stopped.
	Timeout time.Duration
	dead    chan error // the watchdog's *StoppedError
	isDead  atomic.Bool
	lastIn  []atomic.Int64 // unix nanoseconds of the last message from each rank
	// the per-step reductions go through rank 0 as messages, so that a wait
	// on a silent rank has a name
	inbox        []chan []float64
	waitingRank  atomic.Int64 // -1: none
	waitingSince atomic.Int64
	// sendFree holds send buffers whose MPI_Isend has completed, for reuse
	// (persistent buffers: a large message would otherwise cost fresh
	// pages, and their faults, on every send).
	sendMu   sync.Mutex
	sendFree [][]float32
	// shm is the shared memory of the ranks when they all run on one
	// machine (nil otherwise, or with SHARDLAB_MPI_SHM=off): a device lends
	// a buffer that lies in it to a device of another rank in place, and
	// only a 36-byte view message (and a 24-byte one back) goes over MPI.
	// sharedTo counts the bytes so lent to each rank.
	shm      *arena
	sharedTo []atomic.Int64
}

// sendBuffer returns a buffer of n floats, reused when one is free.
func (t *Transport) sendBuffer(n int) []float32 {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	for i := len(t.sendFree) - 1; i >= 0; i-- {
		if b := t.sendFree[i]; cap(b) >= n {
			t.sendFree = append(t.sendFree[:i], t.sendFree[i+1:]...)
			return b[:n]
		}
	}
	return make([]float32, n)
}

// sendDone hands a send buffer back once MPI is done with it.
func (t *Transport) sendDone(b []float32) {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	if len(t.sendFree) < 8 {
		t.sendFree = append(t.sendFree, b)
	}
}

// message kinds in the header's third word
const (
	kindData = iota
	kindClock
	kindReduceUp
	kindReduceDown
	kindView     // data lent in shared memory: offset (two words) and length
	kindViewDone // the receiver has handed a view back
)

type outMsg struct {
	to  int
	buf []float32
}

// NewTransport prepares the transport for a mesh of perHost chips per
// process; Attach connects it to a fabric. It is a collective call (the
// ranks set up their shared memory together): every rank makes it, in the
// same order, with no other transport's progress loop running.
func (w *World) NewTransport(perHost int) *Transport {
	t := &Transport{w: w, perHost: perHost, out: make(chan outMsg, 1024), stop: make(chan struct{}), stopped: make(chan struct{}),
		perPeer: make([]atomic.Int64, w.size), lastIn: make([]atomic.Int64, w.size), Timeout: 10 * time.Minute,
		inbox: make([]chan []float64, w.size), dead: make(chan error, 1), sharedTo: make([]atomic.Int64, w.size)}
	if w.size > 1 {
		w.do(func() error { t.shm = newArena(w.rank, w.size); return nil })
	}
	for i := range t.inbox {
		t.inbox[i] = make(chan []float64, 4)
	}
	t.waitingRank.Store(-1)
	now := time.Now().UnixNano()
	for i := range t.lastIn {
		t.lastIn[i].Store(now)
	}
	return t
}

// Rank is this process's rank.
func (t *Transport) Rank() int { return t.w.rank }

// Size is the number of processes.
func (t *Transport) Size() int { return t.w.size }

// RankOf is the process that runs device d.
func (t *Transport) RankOf(d int) int { return d / t.perHost }

// BytesTo is what this process sent to rank r, headers included.
func (t *Transport) BytesTo(r int) int64 { return t.perPeer[r].Load() }

// SharedBytesTo is what this process lent rank r in shared memory.
func (t *Transport) SharedBytesTo(r int) int64 { return t.sharedTo[r].Load() }

// Shares reports whether this rank and rank r map each other's memory:
// with more than one rank, all run on one machine (the same on every rank).
func (t *Transport) Shares(r int) bool { return t.shm != nil && r != t.w.rank }

// Alloc returns n floats of this rank's shared memory, or nil without any.
// They are the attached fabric's: the next Attach takes them back.
func (t *Transport) Alloc(n int) []float32 {
	if t.shm == nil {
		return nil
	}
	return t.shm.alloc(n)
}

// Lend shows data, when it lies in this rank's shared memory, to device
// dst of another rank in place: a view message carries where it lies.
func (t *Transport) Lend(src, dst int, data []float32, clock float64) bool {
	if t.shm == nil {
		return false
	}
	off, ok := t.shm.offset(data)
	if !ok {
		return false
	}
	r := t.RankOf(dst)
	t.send(r, src, dst, kindView, clock, []float32{math.Float32frombits(uint32(off)), math.Float32frombits(uint32(off >> 32)),
		math.Float32frombits(uint32(len(data)))})
	t.sharedTo[r].Add(int64(len(data)) * 4)
	return true
}

// viewLender hands a view back to its device on another rank.
type viewLender struct {
	t        *Transport
	src, dst int
}

func (l *viewLender) Done() { l.t.send(l.t.RankOf(l.src), l.src, l.dst, kindViewDone, 0, nil) }

// Send queues a device message for another process.
func (t *Transport) Send(src, dst int, data []float32, clock float64, control bool) {
	kind := kindData
	if control {
		kind = kindClock
	}
	t.send(t.RankOf(dst), src, dst, kind, clock, data)
}

func (t *Transport) send(rank, src, dst, kind int, clock float64, data []float32) {
	buf := t.sendBuffer(HeaderWords + len(data))
	bits := math.Float64bits(clock)
	buf[0], buf[1], buf[2] = math.Float32frombits(uint32(src)), math.Float32frombits(uint32(dst)), math.Float32frombits(uint32(kind))
	buf[3], buf[4] = math.Float32frombits(uint32(bits)), math.Float32frombits(uint32(bits>>32))
	copy(buf[HeaderWords:], data)
	t.out <- outMsg{to: rank, buf: buf}
}

func packF64(x []float64) []float32 {
	out := make([]float32, 2*len(x))
	for i, v := range x {
		b := math.Float64bits(v)
		out[2*i], out[2*i+1] = math.Float32frombits(uint32(b)), math.Float32frombits(uint32(b>>32))
	}
	return out
}

func unpackF64(w []float32) []float64 {
	out := make([]float64, len(w)/2)
	for i := range out {
		out[i] = math.Float64frombits(uint64(math.Float32bits(w[2*i])) | uint64(math.Float32bits(w[2*i+1]))<<32)
	}
	return out
}

// reduce combines x over the processes through rank 0, in rank order,
// with point-to-point messages (so a wait has a rank to name).
func (t *Transport) reduce(x []float64, combine func(a, b float64) float64) error {
	if t.w.size == 1 {
		return nil
	}
	wait := func(r int) []float64 {
		t.waitingSince.Store(time.Now().UnixNano())
		t.waitingRank.Store(int64(r))
		v := <-t.inbox[r]
		t.waitingRank.Store(-1)
		return v
	}
	if t.w.rank != 0 {
		t.send(0, -1, -1, kindReduceUp, 0, packF64(x))
		copy(x, wait(0))
		return nil
	}
	for r := 1; r < t.w.size; r++ {
		v := wait(r)
		if len(v) != len(x) {
			return fmt.Errorf("mpi: rank %d reduced %d values, rank 0 %d", r, len(v), len(x))
		}
		for i := range x {
			x[i] = combine(x[i], v[i])
		}
	}
	for r := 1; r < t.w.size; r++ {
		t.send(r, -1, -1, kindReduceDown, 0, packF64(x))
	}
	return nil
}

// Attach runs the progress loop on the MPI goroutine: it posts queued sends
// (MPI_Isend), completes them (MPI_Test), receives whatever arrives
// (MPI_Iprobe, MPI_Recv) and hands it to fab. Other MPI calls (the
// reductions at each step) run in between.
// Attaching another fabric later swaps it in: messages that arrive from
// then on go to the new one (callers make sure the ranks swap together).
func (t *Transport) Attach(fab *fabric.Fabric) {
	if t.shm != nil {
		t.shm.reset() // the last fabric's buffers are done with
	}
	t.fab.Store(fab)
	if t.running {
		return
	}
	t.running = true
	go t.watchdog()
	t.w.work <- t.loop
}

type pending struct {
	req *C.MPI_Request
	buf []float32
	pin runtime.Pinner
}

func (t *Transport) loop() {
	var inflight []*pending
	var in []float32 // the receive buffer, reused
	idle := 0
	for {
		busy := false
		// post sends
		if t.post(&inflight) {
			busy = true
		}
		// complete sends
		kept := inflight[:0]
		for _, p := range inflight {
			var done C.int
			C.testb(p.req, &done)
			if done != 0 {
				C.free_req(p.req)
				p.pin.Unpin()
				t.sendDone(p.buf)
			} else {
				kept = append(kept, p)
			}
		}
		inflight = kept
		// receive
		if t.receive(&in) {
			busy = true
		}
		// other MPI work (reductions, gathers)
		select {
		case f, ok := <-t.w.work:
			if !ok {
				return
			}
			// sends queued before this call was made go first: a peer may
			// need them to reach the same collective
			t.post(&inflight)
			f()
			busy = true
		case <-t.stop:
			if len(inflight) == 0 && len(t.out) == 0 {
				close(t.stopped)
				return
			}
		default:
		}
		if busy {
			idle = 0
		} else if idle++; idle > 100 {
			nap()
		}
	}
}

// receive takes every message that has arrived (MPI_Iprobe, MPI_Recv into
// *in, grown as needed) and hands it on: reductions to their inbox, views
// and data to the fabric. It reports whether there was any.
func (t *Transport) receive(in *[]float32) bool {
	got := false
	for {
		var flag, src, tag, count C.int
		C.iprobeb(&flag, &src, &tag, &count)
		if flag == 0 {
			return got
		}
		got = true
		if cap(*in) < int(count) {
			*in = make([]float32, int(count))
		}
		buf := (*in)[:count]
		C.recvb((*C.float)(unsafe.Pointer(unsafe.SliceData(buf))), count, src, tag)
		t.lastIn[int(src)].Store(time.Now().UnixNano())
		s, d := int(int32(math.Float32bits(buf[0]))), int(int32(math.Float32bits(buf[1])))
		kind := int(math.Float32bits(buf[2]))
		switch kind {
		case kindReduceUp, kindReduceDown:
			t.inbox[int(src)] <- unpackF64(buf[HeaderWords:])
		case kindViewDone:
			t.fab.Load().Returned(s)
		case kindView:
			t.deliverView(int(src), s, d, buf)
		default:
			fab := t.fab.Load()
			var data []float32
			if n := len(buf) - HeaderWords; n > 0 { // into a buffer the device has handed back
				data = fab.Buffer(s, d, n)
				copy(data, buf[HeaderWords:])
			}
			fab.Deliver(s, d, data, headerClock(buf), kind == kindClock)
		}
	}
}

// napTime is how long the progress loop sleeps when nothing has happened
// for a while.
var napTime = syscall.Timespec{Nsec: 20_000}

// nap sleeps the progress loop's thread for napTime in the kernel.
// time.Sleep would not do: on an idle Go runtime it waits in epoll, whose
// timeout counts whole milliseconds, so each hop of a message took a
// millisecond (a 4 KiB MPI_Allreduce handed to the loop measured 1.2 ms,
// 3 µs in C). A thread in a system call keeps its P (the Go scheduler's
// right to run Go code) until sysmon takes it back, so Init gives the
// process a P more than it had: under mpirun, which binds each rank to one
// core, a rank had one P, and the devices stalled while the loop slept
// (the default run over 2 ranks took 70 ms a step instead of 50).
func nap() { syscall.Nanosleep(&napTime, nil) }

// post hands every queued send to MPI_Isend.
func (t *Transport) post(inflight *[]*pending) bool {
	posted := false
	for {
		select {
		case m := <-t.out:
			p := &pending{req: C.new_req(), buf: m.buf}
			p.pin.Pin(&m.buf[0])
			C.isend_f32b((*C.float)(unsafe.Pointer(&m.buf[0])), C.int(len(m.buf)), C.int(m.to), tagData, p.req)
			t.MessagesOut.Add(1)
			t.BytesOut.Add(int64(len(m.buf)) * 4)
			t.perPeer[m.to].Add(int64(len(m.buf)) * 4)
			*inflight = append(*inflight, p)
			posted = true
		default:
			return posted
		}
	}
}

// headerClock is the sender's clock a message's header carries.
func headerClock(buf []float32) float64 {
	return math.Float64frombits(uint64(math.Float32bits(buf[3])) | uint64(math.Float32bits(buf[4]))<<32)
}

// deliverView hands device d the view of rank's shared memory that
// device s lent it (buf is the message, header first).
func (t *Transport) deliverView(rank, s, d int, buf []float32) {
	w := buf[HeaderWords:]
	var view []float32
	if len(w) == 3 && t.shm != nil {
		off := int64(math.Float32bits(w[0])) | int64(math.Float32bits(w[1]))<<32
		view = t.shm.view(rank, off, int64(math.Float32bits(w[2])))
	}
	if view == nil {
		panic(fmt.Sprintf("mpi: rank %d lent device %d a view outside its shared memory", rank, d))
	}
	t.fab.Load().DeliverView(s, d, view, headerClock(buf), &viewLender{t: t, src: s, dst: d})
}

// Stop ends the progress loop once every queued send has completed.
func (t *Transport) Stop() {
	close(t.stop)
	if t.running { // else there is no loop: Attach was never called
		<-t.stopped
	}
	if t.shm != nil {
		t.shm.close(t.w.rank)
		t.shm = nil
	}
}

// Stopped delivers the watchdog's *StoppedError once a peer rank has gone
// silent. The devices waiting on it stay blocked: the caller decides what
// to do (shardlab run reports it and exits without MPI_Finalize, which
// would wait for the silent rank).
func (t *Transport) Stopped() <-chan error { return t.dead }

// Failed reports whether the watchdog has given up on a peer.
func (t *Transport) Failed() bool { return t.isDead.Load() }

// watchdog: when a device has waited on a device of another rank for
// Timeout with nothing arriving from that rank, the rank has died or hung:
// send an error naming it on Stopped rather than wait forever.
func (t *Transport) watchdog() {
	tick := time.NewTicker(max(t.Timeout/10, 10*time.Millisecond))
	defer tick.Stop()
	since := map[[2]int]time.Time{}
	for {
		select {
		case <-t.stop:
			return
		case now := <-tick.C:
			if err := t.check(now, since); err != nil {
				t.isDead.Store(true)
				t.dead <- err // buffered: the watchdog sends once and ends
				return
			}
		}
	}
}

// check looks for a wait on a silent rank at time now; since holds when
// each (device, peer device) wait began and is updated.
func (t *Transport) check(now time.Time, since map[[2]int]time.Time) error {
	if r := int(t.waitingRank.Load()); r >= 0 {
		began := time.Unix(0, t.waitingSince.Load())
		last := time.Unix(0, t.lastIn[r].Load())
		if now.Sub(began) > t.Timeout && now.Sub(last) > t.Timeout {
			return &StoppedError{Rank: t.w.rank, Peer: r, Device: -1, From: -1, Waited: now.Sub(began).Round(time.Second)}
		}
	}
	cur := map[[2]int]bool{}
	for dev, from := range t.fab.Load().Waiting() {
		r := t.RankOf(from)
		if r == t.w.rank {
			continue
		}
		k := [2]int{dev, from}
		cur[k] = true
		start, ok := since[k]
		if !ok {
			start = now
			since[k] = now
		}
		last := time.Unix(0, t.lastIn[r].Load())
		if now.Sub(start) > t.Timeout && now.Sub(last) > t.Timeout {
			return &StoppedError{Rank: t.w.rank, Peer: r, Device: dev, From: from, Waited: now.Sub(start).Round(time.Second)}
		}
	}
	for k := range since {
		if !cur[k] {
			delete(since, k)
		}
	}
	return nil
}

// MaxFloat64 reduces x to its maximum over the processes.
func (t *Transport) MaxFloat64(x []float64) error { return t.reduce(x, math.Max) }

// SumFloat64 sums x over the processes, in rank order.
func (t *Transport) SumFloat64(x []float64) error {
	return t.reduce(x, func(a, b float64) float64 { return a + b })
}

// GatherBytes collects b from every process at process 0.
func (t *Transport) GatherBytes(b []byte) ([][]byte, error) { return t.w.GatherBytes(b) }

var (
	_ fabric.Remote = (*Transport)(nil)
	_ fabric.Sharer = (*Transport)(nil)
)
