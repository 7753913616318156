//go:build !openblas

package main

import "shardlab/emu/kernel"

// buildGEMM is the GEMM `run` trains with: the Go toolchain's in the
// default build, OpenBLAS's with the openblas tag (gemm_openblas.go).
func buildGEMM() kernel.GEMM { return kernel.Go() }
