package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"

	"shardlab/emu"
	"shardlab/unit"
)

// memAvailable is the memory this process may still use: the kernel's
// MemAvailable, or less when a cgroup (v2) limit leaves less. ok is false
// when neither can be read (not Linux). A variable so tests can fix it.
var memAvailable = func() (avail int64, ok bool) {
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		avail, ok = parseMemAvailable(b)
	}
	limit, err1 := os.ReadFile("/sys/fs/cgroup/memory.max")
	stat, err2 := os.ReadFile("/sys/fs/cgroup/memory.stat")
	if err1 == nil && err2 == nil {
		if c, cok := cgroupAvailable(limit, stat); cok && (!ok || c < avail) {
			avail, ok = c, true
		}
	}
	return avail, ok
}

// cgroupAvailable is a cgroup v2 limit (memory.max) less the anonymous
// memory its processes hold (memory.stat's anon): the page cache that
// memory.current also counts is reclaimed before anything is killed.
// ok is false without a limit ("max").
func cgroupAvailable(limit, stat []byte) (int64, bool) {
	l, err := strconv.ParseInt(strings.TrimSpace(string(limit)), 10, 64)
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(stat))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "anon" {
			if anon, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return max(l-anon, 0), true
			}
		}
	}
	return 0, false
}

// parseMemAvailable reads "MemAvailable: 123 kB" from /proc/meminfo.
func parseMemAvailable(meminfo []byte) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "MemAvailable:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err == nil && kb >= 0 && kb < math.MaxInt64/1024 {
				return kb * 1024, true
			}
		}
	}
	return 0, false
}

// checkRunMemory refuses a run whose estimated memory in this process is
// more than the machine has available, before any of it is allocated. It
// returns the memory limit to hold the Go runtime to while the run trains:
// what the process holds now plus the estimate (at most what is
// available). Without it the collector lets the heap grow to twice what
// was live at its last cycle: run --layers 1024 estimated 9.7 GB and took
// 14.0 GB of RSS.
func checkRunMemory(tc emu.TrainConfig) (int64, error) {
	fp, err := emu.EstimateMemory(tc)
	if err != nil {
		return 0, usageError{err}
	}
	limit := math.MaxInt64 - fp.Process // saturated: no limit
	if limit > runtimeMemory() {
		limit = runtimeMemory() + fp.Process
	}
	avail, ok := memAvailable()
	if !ok {
		return limit, nil
	}
	if fp.Process > avail {
		where := "this process"
		if tc.Remote != nil {
			where = fmt.Sprintf("MPI rank %d", tc.Remote.Rank())
		}
		return 0, bad("run: the emulator would need about %v in %s (%v of weights and optimizer state, up to %v more at its peak), "+
			"but this machine has %v available: want a smaller --d-model, --layers, --seq or --batch, or more MPI ranks",
			bytesOf(fp.Process), where, bytesOf(fp.Static), bytesOf(fp.Process-fp.Static), unit.Bytes(avail))
	}
	return min(limit, avail), nil
}

// runtimeMemory is the memory the Go runtime holds from the system now
// (what its memory limit counts).
func runtimeMemory() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// bytesOf renders a saturated estimate.
func bytesOf(n int64) string {
	if n == math.MaxInt64 {
		return "more than 8 EiB"
	}
	return unit.Bytes(n).String()
}
