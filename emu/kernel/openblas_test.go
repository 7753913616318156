//go:build openblas

package kernel

import "shardlab/emu/kernel/openblas"

// With the openblas tag the tests check OpenBLAS's GEMM too, and the
// benchmark times it.
func init() { tagged = append(tagged, openblas.New()) }
