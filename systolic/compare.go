package systolic

import (
	"fmt"
	"math"
)

// ExecModel is how one kind of processor runs a GEMM: its memory accesses
// and the time at its rate.
type ExecModel struct {
	Processor      string  `json:"processor"`
	ALUs           int     `json:"alus"`
	ClockHz        float64 `json:"clock_hz"`
	MACs           int64   `json:"macs"`
	MemoryAccesses int64   `json:"memory_accesses"`
	AccessesPerMAC float64 `json:"memory_accesses_per_mac"`
	Seconds        float64 `json:"time_s"`
	How            string  `json:"how"`
}

// Machines sets the processors Compare models.
type Machines struct {
	CPUClockHz float64 // one scalar core, one MAC per cycle
	GPUALUs    int     // the seed's "thousands of ALUs": 2,500–5,000
	GPUClockHz float64
	GPUTile    int // shared-memory tile side of the GPU kernel
	TPU        Preset
}

// op is one memory operation in a loop body.
type op struct {
	name  string
	write bool
}

// countLoop counts the memory operations of a loop nest whose innermost
// body runs once per MAC, plus per-tile operations that run once per tile.
func countLoop(macs int64, body []op) int64 { return macs * int64(len(body)) }

// Compare runs the same GEMM on three execution models and counts memory
// accesses from each one's loop structure:
//
//   - CPU (von Neumann): the scalar triple loop; every MAC loads its two
//     operands and the running sum and stores the sum back.
//   - GPU: each of the ALUs owns an output in a register-tiled kernel;
//     every MAC reads its two operands from shared memory (or registers) and
//     writes the intermediate sum; tiles of A and B come from global memory
//     once per tile.
//   - TPU MXU: weight stationary; operands enter the array once per fold
//     and partial sums move between neighbouring MACs (the systolic closed
//     form's buffer accesses); its time is the closed form's cycles over
//     the chip's MXUs (Preset.Cycles), which leaves out the stalls
//     Simulate counts, and its How says so.
func Compare(g GEMM, m Machines) ([]ExecModel, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	finite := func(hz float64) bool { return hz > 0 && !math.IsInf(hz, 0) } // false for NaN too
	if !finite(m.CPUClockHz) || m.GPUALUs <= 0 || !finite(m.GPUClockHz) || m.GPUTile <= 0 {
		return nil, fmt.Errorf("systolic: compare needs a finite positive CPU clock (%v Hz), GPU ALUs (%d), GPU clock (%v Hz) and tile (%d): %w",
			m.CPUClockHz, m.GPUALUs, m.GPUClockHz, m.GPUTile, ErrInvalid)
	}
	macs := g.MACs()
	cpuBody := []op{{"load A[i][k]", false}, {"load B[k][j]", false}, {"load C[i][j]", false}, {"store C[i][j]", true}}
	cpu := countLoop(macs, cpuBody)
	gpuBody := []op{{"read A tile", false}, {"read B tile", false}, {"write sum", true}}
	tile := int64(m.GPUTile)
	// global loads: every tile×tile block of C streams its K-long strips of A and B
	blocks := int64(ceilDiv(g.M, m.GPUTile)) * int64(ceilDiv(g.N, m.GPUTile))
	global := blocks * 2 * tile * int64(g.K)
	gpu := countLoop(macs, gpuBody) + global
	cycles, r, err := m.TPU.Cycles(g)
	if err != nil {
		return nil, err
	}
	tpu := r.Buffer.Total()
	mxuALUs := m.TPU.MXUs * m.TPU.Rows * m.TPU.Cols
	return []ExecModel{
		{Processor: "CPU (scalar von Neumann core)", ALUs: 1, ClockHz: m.CPUClockHz, MACs: macs, MemoryAccesses: cpu,
			AccessesPerMAC: float64(cpu) / float64(macs), Seconds: float64(macs) / m.CPUClockHz,
			How: "load operands and sum, multiply-add, store the sum, for every MAC"},
		{Processor: "GPU (SIMT ALUs)", ALUs: m.GPUALUs, ClockHz: m.GPUClockHz, MACs: macs, MemoryAccesses: gpu,
			AccessesPerMAC: float64(gpu) / float64(macs), Seconds: float64(macs) / (float64(m.GPUALUs) * m.GPUClockHz),
			How: fmt.Sprintf("each ALU reads two operands from shared memory and writes its intermediate; %dx%d tiles from global memory", m.GPUTile, m.GPUTile)},
		{Processor: "TPU MXU (" + m.TPU.Chip.Name + ")", ALUs: mxuALUs, ClockHz: m.TPU.ClockHz, MACs: macs, MemoryAccesses: tpu,
			AccessesPerMAC: float64(tpu) / float64(macs), Seconds: cycles / m.TPU.ClockHz,
			How: fmt.Sprintf("weights load once per fold; inputs stream in once; partial sums pass MAC to MAC; time by the closed form's cycles over %d MXUs, without the HBM and weight-load stalls a cycle-level simulation adds", m.TPU.MXUs)},
	}, nil
}
