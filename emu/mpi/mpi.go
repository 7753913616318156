//go:build mpi

// Package mpi is a thin cgo layer over Open MPI (build tag mpi) and the
// emulator's transport across processes on top of it: each MPI rank is one
// host (VM) running its chips as goroutines, and messages between chips on
// different ranks travel as MPI messages, or, between ranks on one
// machine, as views of shared memory the peer reads in place (shm.go).
// Without the tag the package builds as a one-rank stand-in, so
// go test ./... needs no MPI library.
//
// Open MPI's handles (MPI_COMM_WORLD, MPI_FLOAT, …) are macros over global
// structs, so each is wrapped in a one-line C function. MPI is initialised
// with MPI_THREAD_FUNNELED on one OS-locked goroutine that makes every MPI
// call; the rest of the program hands it work over a channel.
package mpi

/*
#cgo pkg-config: ompi-c
#include <mpi.h>
#include <malloc.h>
#include <stdlib.h>

// keep_heap is MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_ set to
// threshold, unless the environment sets them: Open MPI mallocs and frees a
// temporary buffer the size of a large message on every collective, which
// glibc would otherwise map and unmap each time, page faults and all.
static void keep_heap(size_t threshold) {
	if (getenv("MALLOC_MMAP_THRESHOLD_") == NULL) mallopt(M_MMAP_THRESHOLD, (int)threshold);
	if (getenv("MALLOC_TRIM_THRESHOLD_") == NULL) mallopt(M_TRIM_THRESHOLD, (int)threshold);
}
static void set_heap(size_t threshold) { mallopt(M_MMAP_THRESHOLD, (int)threshold); mallopt(M_TRIM_THRESHOLD, (int)threshold); }
static int init_funneled(int *provided) { return MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, provided); }
static int rank(void) { int r; MPI_Comm_rank(MPI_COMM_WORLD, &r); return r; }
static int size(void) { int s; MPI_Comm_size(MPI_COMM_WORLD, &s); return s; }
static int barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }
static int allreduce_f32(float *buf, int n) { return MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }
static int allreduce_max_f64(double *buf, int n) { return MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); }
static int allreduce_sum_f64(double *buf, int n) { return MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); }
static int allgather_f32(float *in, int n, float *out) { return MPI_Allgather(in, n, MPI_FLOAT, out, n, MPI_FLOAT, MPI_COMM_WORLD); }
static int reduce_scatter_f32(float *in, float *out, int n) { return MPI_Reduce_scatter_block(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }
static int alltoall_f32(float *in, float *out, int n) { return MPI_Alltoall(in, n, MPI_FLOAT, out, n, MPI_FLOAT, MPI_COMM_WORLD); }
static int allgather_int(int *in, int *out) { return MPI_Allgather(in, 1, MPI_INT, out, 1, MPI_INT, MPI_COMM_WORLD); }
static int gatherv_bytes(void *in, int n, void *out, int *counts, int *displs, int root) {
	return MPI_Gatherv(in, n, MPI_BYTE, out, counts, displs, MPI_BYTE, root, MPI_COMM_WORLD);
}
static int recv_f32(float *buf, int n, int from, int tag) { return MPI_Recv(buf, n, MPI_FLOAT, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
static int send_f32(float *buf, int n, int to, int tag) { return MPI_Send(buf, n, MPI_FLOAT, to, tag, MPI_COMM_WORLD); }
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Available reports whether this build talks to a real MPI library.
const Available = true

// HeapThreshold is the largest allocation glibc serves from its heap, and
// the free memory it keeps there, in a process that calls Init (glibc's
// MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_, which take precedence
// when set): Open MPI allocates a temporary buffer the size of a large
// message on every collective, and mapping and unmapping it each time cost
// page faults that halved MPI_Allreduce's bandwidth at 64 MiB.
const HeapThreshold = 1 << 30

// glibcDefaultThreshold is glibc's default for both thresholds (128 KiB),
// which the benchmarks restore to measure against.
const glibcDefaultThreshold = 128 << 10

// setHeapThreshold sets both thresholds, whatever the environment says.
func setHeapThreshold(n int) { C.set_heap(C.size_t(n)) }

// World is the MPI job as this process sees it. All MPI calls run on one
// OS-locked goroutine (MPI_THREAD_FUNNELED); the methods hand it work.
type World struct {
	rank, size int
	work       chan func()
	done       chan struct{}
	once       sync.Once
}

func check(rc C.int, what string) error {
	if rc != C.MPI_SUCCESS {
		return fmt.Errorf("mpi: %s failed with code %d", what, int(rc))
	}
	return nil
}

// Init initialises MPI on a dedicated, OS-locked goroutine. It also sets
// GOMAXPROCS to one more than the runtime chose (from the CPUs the process
// may use, or the GOMAXPROCS variable), for the thread that makes the MPI
// calls: it holds a P while it naps between polls (nap), which under
// mpirun's binding of a rank to one core left the chips none. The
// runtime then no longer follows changes of the CPU quota.
func Init() (*World, error) {
	w := &World{work: make(chan func()), done: make(chan struct{})}
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		C.keep_heap(C.size_t(HeapThreshold))
		var provided C.int
		if err := check(C.init_funneled(&provided), "MPI_Init_thread"); err != nil {
			errc <- err
			return
		}
		if provided < C.MPI_THREAD_FUNNELED {
			errc <- fmt.Errorf("mpi: the library provides thread level %d, want MPI_THREAD_FUNNELED", int(provided))
			return
		}
		w.rank, w.size = int(C.rank()), int(C.size())
		errc <- nil
		for f := range w.work {
			f()
		}
		C.MPI_Finalize()
		close(w.done)
	}()
	if err := <-errc; err != nil {
		return nil, err
	}
	return w, nil
}

// Finalize ends MPI; the World is unusable afterwards.
func (w *World) Finalize() {
	w.once.Do(func() {
		close(w.work)
		<-w.done
	})
}

// do runs f on the MPI goroutine and waits.
func (w *World) do(f func() error) error {
	errc := make(chan error, 1)
	w.work <- func() { errc <- f() }
	return <-errc
}

// Rank is this process's rank; Size the number of ranks.
func (w *World) Rank() int { return w.rank }

// Size is the number of ranks.
func (w *World) Size() int { return w.size }

// Barrier waits for every rank.
func (w *World) Barrier() error {
	return w.do(func() error { return check(C.barrier(), "MPI_Barrier") })
}

func f32(x []float32) *C.float {
	if len(x) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(unsafe.SliceData(x)))
}

// Allreduce sums x over all ranks, in place.
func (w *World) Allreduce(x []float32) error {
	return w.do(func() error { return check(C.allreduce_f32(f32(x), C.int(len(x))), "MPI_Allreduce") })
}

// AllreduceMax takes the element-wise maximum of x over all ranks.
func (w *World) AllreduceMax(x []float64) error {
	return w.do(func() error {
		return check(C.allreduce_max_f64((*C.double)(unsafe.Pointer(unsafe.SliceData(x))), C.int(len(x))), "MPI_Allreduce(MAX)")
	})
}

// AllreduceSum64 sums x over all ranks.
func (w *World) AllreduceSum64(x []float64) error {
	return w.do(func() error {
		return check(C.allreduce_sum_f64((*C.double)(unsafe.Pointer(unsafe.SliceData(x))), C.int(len(x))), "MPI_Allreduce(SUM)")
	})
}

// Allgather returns every rank's x concatenated by rank.
func (w *World) Allgather(x []float32) ([]float32, error) {
	out := make([]float32, len(x)*w.size)
	err := w.do(func() error { return check(C.allgather_f32(f32(x), C.int(len(x)), f32(out)), "MPI_Allgather") })
	return out, err
}

// ReduceScatter sums x over all ranks and returns this rank's 1/size.
func (w *World) ReduceScatter(x []float32) ([]float32, error) {
	if len(x)%w.size != 0 {
		return nil, fmt.Errorf("mpi: reduce-scatter of %d values over %d ranks, want a multiple", len(x), w.size)
	}
	out := make([]float32, len(x)/w.size)
	err := w.do(func() error {
		return check(C.reduce_scatter_f32(f32(x), f32(out), C.int(len(out))), "MPI_Reduce_scatter_block")
	})
	return out, err
}

// Alltoall sends the i-th 1/size of x to rank i.
func (w *World) Alltoall(x []float32) ([]float32, error) {
	if len(x)%w.size != 0 {
		return nil, fmt.Errorf("mpi: all-to-all of %d values over %d ranks, want a multiple", len(x), w.size)
	}
	out := make([]float32, len(x))
	err := w.do(func() error { return check(C.alltoall_f32(f32(x), f32(out), C.int(len(x)/w.size)), "MPI_Alltoall") })
	return out, err
}

// Send sends x to rank to with tag (blocking).
func (w *World) Send(to, tag int, x []float32) error {
	return w.do(func() error { return check(C.send_f32(f32(x), C.int(len(x)), C.int(to), C.int(tag)), "MPI_Send") })
}

// Recv receives n values from rank from with tag (blocking).
func (w *World) Recv(from, tag, n int) ([]float32, error) {
	out := make([]float32, n)
	err := w.do(func() error { return check(C.recv_f32(f32(out), C.int(n), C.int(from), C.int(tag)), "MPI_Recv") })
	return out, err
}

// GatherBytes collects every rank's b (any length) at rank 0, by rank.
func (w *World) GatherBytes(b []byte) ([][]byte, error) {
	var out [][]byte
	err := w.do(func() error {
		n := C.int(len(b))
		counts := make([]C.int, w.size)
		if err := check(C.allgather_int(&n, &counts[0]), "MPI_Allgather(counts)"); err != nil {
			return err
		}
		displs := make([]C.int, w.size)
		total := 0
		for i, c := range counts {
			displs[i] = C.int(total)
			total += int(c)
		}
		buf := C.malloc(C.size_t(max(total, 1)))
		defer C.free(buf)
		in := C.malloc(C.size_t(max(len(b), 1)))
		defer C.free(in)
		if len(b) > 0 {
			copy(unsafe.Slice((*byte)(in), len(b)), b)
		}
		if err := check(C.gatherv_bytes(in, n, buf, &counts[0], &displs[0], 0), "MPI_Gatherv"); err != nil {
			return err
		}
		if w.rank == 0 {
			all := C.GoBytes(buf, C.int(total))
			for i := range w.size {
				out = append(out, all[displs[i]:int(displs[i])+int(counts[i])])
			}
		}
		return nil
	})
	return out, err
}

// byRank returns a function listing f(r) for every rank r < n.
func byRank(n int, f func(r int) int64) func() []int64 {
	return func() []int64 {
		out := make([]int64, n)
		for r := range out {
			out[r] = f(r)
		}
		return out
	}
}

// Connect joins the MPI job for a mesh of hosts × perHost chips: one rank
// per host. A device that waits longer than timeout on a silent rank ends
// the process with an error naming that rank.
func Connect(hosts, perHost int, timeout time.Duration) (*Job, error) {
	w, err := Init()
	if err != nil {
		return nil, err
	}
	if w.Size() != hosts {
		w.Finalize()
		return nil, fmt.Errorf("mpi: %d ranks for a mesh of %d hosts; run one rank per host (mpirun -np %d)", w.Size(), hosts, hosts)
	}
	t := w.NewTransport(perHost)
	if timeout > 0 {
		t.Timeout = timeout
	}
	return &Job{Rank: w.Rank(), Size: w.Size(), Remote: t,
		BytesTo:  byRank(w.Size(), t.BytesTo),
		SharedTo: byRank(w.Size(), t.SharedBytesTo),
		Gather:   w.GatherBytes,
		Barrier:  w.Barrier,
		Stopped:  t.Stopped(),
		Close: func() {
			if t.Failed() {
				return // a silent rank would keep Stop and MPI_Finalize waiting
			}
			t.Stop()
			w.Finalize()
		},
	}, nil
}
