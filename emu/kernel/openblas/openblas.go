//go:build openblas

package openblas

/*
#cgo pkg-config: openblas
#include <cblas.h>
void openblas_set_num_threads(int);
*/
import "C"

import "unsafe"

// GEMM is cblas_sgemm from the system's OpenBLAS (Debian's
// libopenblas-dev), used in builds with the openblas tag. Debian's build
// misdetects some CPUs: export OPENBLAS_CORETYPE (SkylakeX with AVX-512,
// Haswell with AVX2) before the process starts, since the library reads it
// when it loads.
type GEMM struct{}

// Name says which kernel this is.
func (GEMM) Name() string { return "OpenBLAS cblas_sgemm" }

// New returns OpenBLAS's GEMM, a kernel.GEMM to pass to emu.TrainConfig.
func New() GEMM { return GEMM{} }

func init() {
	// virtual devices call it from many goroutines: one thread each
	C.openblas_set_num_threads(1)
}

// Sgemm implements kernel.GEMM.
func (GEMM) Sgemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, acc bool, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	ta, tb := C.enum_CBLAS_TRANSPOSE(C.CblasNoTrans), C.enum_CBLAS_TRANSPOSE(C.CblasNoTrans)
	if transA {
		ta = C.CblasTrans
	}
	if transB {
		tb = C.CblasTrans
	}
	beta := C.float(0)
	if acc {
		beta = 1
	}
	if k == 0 {
		if !acc {
			for i := range m {
				clear(c[i*ldc : i*ldc+n])
			}
		}
		return
	}
	C.cblas_sgemm(C.CblasRowMajor, ta, tb, C.blasint(m), C.blasint(n), C.blasint(k), 1,
		(*C.float)(unsafe.Pointer(&a[0])), C.blasint(lda), (*C.float)(unsafe.Pointer(&b[0])), C.blasint(ldb),
		beta, (*C.float)(unsafe.Pointer(&c[0])), C.blasint(ldc))
}
