// Package openblas is the emulator's optional GEMM over the system's
// OpenBLAS (cgo, build tag openblas; Debian's libopenblas-dev): New returns
// a kernel.GEMM that a caller passes to emu.TrainConfig. Without the tag
// the package is empty, so the default build needs no C toolchain.
package openblas
