//go:build mpi

package mpi

/*
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <mpi.h>

// arena_new maps size bytes of a new anonymous shared-memory file
// (memfd): the pages cost nothing until touched, and the file goes away
// with the last process that maps it, so a killed rank leaves nothing
// behind in /dev/shm.
static void *arena_new(size_t size, int *fd) {
	int f = memfd_create("shardlab-arena", MFD_CLOEXEC);
	if (f < 0) return NULL;
	if (ftruncate(f, (off_t)size) != 0) { close(f); return NULL; }
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, f, 0);
	if (p == MAP_FAILED) { close(f); return NULL; }
	*fd = f;
	return p;
}

// arena_open maps process pid's arena, its file descriptor fd, through
// /proc (same user, same machine).
// It maps nothing unless the descriptor names a memfd of ours of the
// arena's size: on another machine the same pid and descriptor could name
// any file, and mapping past a shorter file's end faults (SIGBUS) when read.
static void *arena_open(long long pid, long long fd, size_t size) {
	char path[64], target[64];
	snprintf(path, sizeof path, "/proc/%lld/fd/%lld", pid, fd);
	ssize_t n = readlink(path, target, sizeof target - 1);
	if (n < 0) return NULL;
	target[n] = 0;
	if (strncmp(target, "/memfd:shardlab-arena", 21) != 0) return NULL;
	int f = open(path, O_RDWR | O_CLOEXEC);
	if (f < 0) return NULL;
	struct stat st;
	if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size != size) { close(f); return NULL; }
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, f, 0);
	close(f);
	return p == MAP_FAILED ? NULL : p;
}

static void arena_close(void *p, size_t size) { munmap(p, size); }
static void fd_close(int fd) { close(fd); }

static int allgather_i64(long long *in, int n, long long *out) {
	return MPI_Allgather(in, n, MPI_LONG_LONG, out, n, MPI_LONG_LONG, MPI_COMM_WORLD);
}
static int allreduce_min_int(int *x) { return MPI_Allreduce(MPI_IN_PLACE, x, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD); }
*/
import "C"

import (
	"crypto/rand"
	"encoding/binary"
	"math"
	"os"
	"sync"
	"unsafe"
)

// ArenaBytes is the address space each rank reserves for its shared
// memory. Only the pages a buffer touches take memory, so it bounds the
// gradient buffers one process can share, not what it uses.
const ArenaBytes = 64 << 30

// arenaHeader is the start of an arena kept for a random token by which
// peers check that they mapped the right process's memory (a pid and a
// descriptor number could name another process on another machine).
const arenaHeader = 4096

// arena is the shared memory of the ranks on one machine: each rank's
// own file, mapped by itself and by every peer, so that a device can show
// a device of another rank a buffer in place (fabric.Sharer).
type arena struct {
	fd    C.int
	base  unsafe.Pointer   // this rank's arena
	peers []unsafe.Pointer // every rank's, as mapped here (base for this one)
	mu    sync.Mutex
	next  uintptr // the first free byte
	high  uintptr // the end of what was ever handed out
}

// shmOff is SHARDLAB_MPI_SHM=off: messages between the ranks of one
// machine then go through MPI as copies, as between machines.
func shmOff() bool { return os.Getenv("SHARDLAB_MPI_SHM") == "off" }

// newArena creates this rank's arena and maps every other rank's: a
// collective call, run on the MPI goroutine. It returns nil, on every
// rank, unless every rank could map every other's (one machine, memfd and
// /proc, SHARDLAB_MPI_SHM not off).
func newArena(rank, size int) *arena {
	a := &arena{fd: -1, peers: make([]unsafe.Pointer, size), next: arenaHeader, high: arenaHeader}
	var token [8]byte
	rand.Read(token[:])
	mine := [3]C.longlong{C.longlong(os.Getpid()), -1, C.longlong(binary.LittleEndian.Uint64(token[:]))}
	if !shmOff() {
		if p := C.arena_new(ArenaBytes, &a.fd); p != nil {
			a.base = p
			*(*uint64)(p) = binary.LittleEndian.Uint64(token[:])
			mine[1] = C.longlong(a.fd)
		}
	}
	all := make([]C.longlong, 3*size)
	ok := C.int(1)
	if C.allgather_i64(&mine[0], 3, &all[0]) != C.MPI_SUCCESS {
		ok = 0
	}
	for r := 0; r < size && ok == 1; r++ {
		pid, fd, tok := all[3*r], all[3*r+1], all[3*r+2]
		switch {
		case fd < 0:
			ok = 0
		case r == rank:
			a.peers[r] = a.base
		default:
			p := openArena(int64(pid), int64(fd))
			if p == nil {
				ok = 0
				break
			}
			a.peers[r] = p
			if *(*uint64)(p) != uint64(tok) {
				ok = 0
			}
		}
	}
	if C.allreduce_min_int(&ok) != C.MPI_SUCCESS || ok == 0 {
		a.close(rank)
		return nil
	}
	return a
}

// openArena maps the arena of process pid, descriptor fd, or returns nil
// when that is not a shardlab arena of the right size.
func openArena(pid, fd int64) unsafe.Pointer {
	return C.arena_open(C.longlong(pid), C.longlong(fd), ArenaBytes)
}

// close unmaps every arena and closes this rank's file.
func (a *arena) close(rank int) {
	for r, p := range a.peers {
		if p != nil && r != rank {
			C.arena_close(p, ArenaBytes)
		}
	}
	if a.base != nil {
		C.arena_close(a.base, ArenaBytes)
	}
	if a.fd >= 0 {
		C.fd_close(a.fd)
	}
	a.base, a.fd = nil, -1
	clear(a.peers)
}

// alloc returns n floats of the arena (aligned to a page, so that two
// buffers never share a cache line), or nil when it is full. Buffers are
// not freed one by one: a device takes the ones it reuses for a whole
// training, and reset hands them all back when the next one attaches.
func (a *arena) alloc(n int) []float32 {
	if n <= 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	bytes := (uintptr(n)*4 + 4095) &^ 4095
	if a.next+bytes > ArenaBytes {
		return nil
	}
	p := unsafe.Add(a.base, a.next)
	b := unsafe.Slice((*float32)(p), n)
	if a.next < a.high { // handed out before a reset: zero it, as fresh pages are
		clear(b[:min(uintptr(n), (a.high-a.next)/4)])
	}
	a.next += bytes
	a.high = max(a.high, a.next)
	return b
}

// reset makes the whole arena free again (its pages stay mapped).
func (a *arena) reset() {
	a.mu.Lock()
	a.next = arenaHeader
	a.mu.Unlock()
}

// offset is where data starts in this rank's arena, in floats, if it lies
// there (and is short enough for a view message's 32-bit length).
func (a *arena) offset(data []float32) (int64, bool) {
	if len(data) == 0 {
		return 0, false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	lo := uintptr(a.base)
	if p < lo+arenaHeader || p+uintptr(len(data))*4 > lo+ArenaBytes || (p-lo)%4 != 0 || len(data) > math.MaxUint32 {
		return 0, false // not in the arena, or longer than a view message says
	}
	return int64(p-lo) / 4, true
}

// view is n floats at offset off (in floats) of rank r's arena, or nil
// when that is not inside it.
func (a *arena) view(r int, off, n int64) []float32 {
	if r < 0 || r >= len(a.peers) || a.peers[r] == nil || off < arenaHeader/4 || n <= 0 || off > ArenaBytes/4-n {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Add(a.peers[r], off*4)), n)
}
