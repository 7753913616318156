//go:build openblas

package main

import (
	"shardlab/emu/kernel"
	"shardlab/emu/kernel/openblas"
)

// buildGEMM is the GEMM `run` trains with: OpenBLAS's in a build with the
// openblas tag (gemm.go has the default build's).
func buildGEMM() kernel.GEMM { return openblas.New() }
