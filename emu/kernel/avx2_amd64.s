//go:build amd64 && !purego

#include "textflag.h"

// The kernels share their blocks as macros (the assembler's C-style
// #define): the accumulators' clearing, one k step of a block's FMA
// chains and the block's sum into C; the kernels that come in both widths
// (peak, the vector sums, reduceFan) are written once over their vector
// registers and width in bytes W, and instantiated for AVX2 (Y
// registers, W 32) and AVX-512 (Z registers, W 64). A macro expands to
// the instructions written out in full (go tool objdump shows the same
// bytes); they carry the line of the macro's use.

// The frames: kernels declared alike in avx2_amd64.go load their
// arguments with one macro, defined here above every TEXT so that vet's
// asmdecl, which reads the file line by line, does not check its FP
// names against the function before it (it does not look inside a
// macro's use either: the kernels' tests against plain Go hold the
// offsets).
//
// FRAME8X32 loads add8x32's and add8x32rows's (a, b, kc, lda, ldb, c,
// ldc) into SI, DI, CX, R9, R10, DX and R8, the strides in bytes.
#define FRAME8X32 \
	MOVQ a+0(FP), SI; \
	MOVQ b+8(FP), DI; \
	MOVQ kc+16(FP), CX; \
	MOVQ lda+24(FP), R9; \
	SHLQ $2, R9; \
	MOVQ ldb+32(FP), R10; \
	SHLQ $2, R10; \
	MOVQ c+40(FP), DX; \
	MOVQ ldc+48(FP), R8; \
	SHLQ $2, R8

// FRAMESUMS loads the vector sums' (a, b, n) into DI, SI and CX.
#define FRAMESUMS \
	MOVQ a+0(FP), DI; \
	MOVQ b+8(FP), SI; \
	MOVQ n+16(FP), CX

// FRAMEFAN loads reduceFan's (ins, nin, outs, nout, n) into R8, R9, R10,
// R11 and CX.
#define FRAMEFAN \
	MOVQ ins+0(FP), R8; \
	MOVQ nin+8(FP), R9; \
	MOVQ outs+16(FP), R10; \
	MOVQ nout+24(FP), R11; \
	MOVQ n+32(FP), CX

// CLEAR4(XOR, R0, R1, R2, R3) clears four vector registers, each XORed
// with itself; ZERO_Y0_Y7 clears Y0–Y7 and ZERO_Z0_Z15 Z0–Z15.
#define CLEAR4(XOR, R0, R1, R2, R3) \
	XOR R0, R0, R0; \
	XOR R1, R1, R1; \
	XOR R2, R2, R2; \
	XOR R3, R3, R3

#define ZERO_Y0_Y7 \
	CLEAR4(VXORPS, Y0, Y1, Y2, Y3); \
	CLEAR4(VXORPS, Y4, Y5, Y6, Y7)

#define ZERO_Z0_Z15 \
	CLEAR4(VPXORD, Z0, Z1, Z2, Z3); \
	CLEAR4(VPXORD, Z4, Z5, Z6, Z7); \
	CLEAR4(VPXORD, Z8, Z9, Z10, Z11); \
	CLEAR4(VPXORD, Z12, Z13, Z14, Z15)

// A step p of a block's FMA chains loads b's two vectors of step p at DI
// into B0 and B1 (W bytes each) with LOADB(B0, B1, W); then
// FMAROW(A, T, B0, B1, D0, D1) broadcasts a row's float of step p, at A,
// into T and adds T·B0 and T·B1 into the row's accumulators D0 and D1.
#define LOADB(B0, B1, W) \
	VMOVUPS (DI), B0; \
	VMOVUPS W(DI), B1

#define FMAROW(A, T, B0, B1, D0, D1) \
	VBROADCASTSS A, T; \
	VFMADD231PS B0, T, D0; \
	VFMADD231PS B1, T, D1

// STEP4X16 is one step p of a 4×16 block's FMA chains (Y0–Y7, two a
// row): b's sixteen floats at DI times each of a's four at SI; then SI
// and DI move to step p+1 of their packed strips.
#define STEP4X16 \
	LOADB(Y8, Y9, 32); \
	FMAROW((SI), Y10, Y8, Y9, Y0, Y1); \
	FMAROW(4(SI), Y11, Y8, Y9, Y2, Y3); \
	FMAROW(8(SI), Y12, Y8, Y9, Y4, Y5); \
	FMAROW(12(SI), Y13, Y8, Y9, Y6, Y7); \
	ADDQ $16, SI; \
	ADDQ $64, DI

// STEP8X32(A0, …, A7) is one step p of an 8×32 block's FMA chains
// (Z0–Z15, two a row): b's thirty-two floats at DI times a's float of
// row ii at Aii. The caller moves the pointers to step p+1.
#define STEP8X32(A0, A1, A2, A3, A4, A5, A6, A7) \
	LOADB(Z16, Z17, 64); \
	FMAROW(A0, Z18, Z16, Z17, Z0, Z1); \
	FMAROW(A1, Z19, Z16, Z17, Z2, Z3); \
	FMAROW(A2, Z20, Z16, Z17, Z4, Z5); \
	FMAROW(A3, Z21, Z16, Z17, Z6, Z7); \
	FMAROW(A4, Z18, Z16, Z17, Z8, Z9); \
	FMAROW(A5, Z19, Z16, Z17, Z10, Z11); \
	FMAROW(A6, Z20, Z16, Z17, Z12, Z13); \
	FMAROW(A7, Z21, Z16, Z17, Z14, Z15)

// ADDROW(V0, V1, W) adds a block's row, V0 and V1, into C's row at DX;
// NEXTROW(V0, V1, W) does so and moves DX to C's next row, R8 bytes on.
#define ADDROW(V0, V1, W) \
	VADDPS (DX), V0, V0; \
	VMOVUPS V0, (DX); \
	VADDPS W(DX), V1, V1; \
	VMOVUPS V1, W(DX)

#define NEXTROW(V0, V1, W) \
	ADDROW(V0, V1, W); \
	ADDQ R8, DX

// func micro4x16(a, b *float32, kc int, c *float32)
TEXT ·micro4x16(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ kc+16(FP), CX
	MOVQ c+24(FP), DX
	ZERO_Y0_Y7

loop:
	STEP4X16
	DECQ CX
	JNZ loop

	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VMOVUPS Y4, 128(DX)
	VMOVUPS Y5, 160(DX)
	VMOVUPS Y6, 192(DX)
	VMOVUPS Y7, 224(DX)
	VZEROUPPER
	RET

// func add4x16(a, b *float32, kc int, c *float32, ldc int)
//
// The same sums as micro4x16 (one FMA chain per element from zero, p in
// order), then added into C's rows, ldc floats apart.
TEXT ·add4x16(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ kc+16(FP), CX
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	ZERO_Y0_Y7

loop4:
	STEP4X16
	DECQ CX
	JNZ loop4

	NEXTROW(Y0, Y1, 32)
	NEXTROW(Y2, Y3, 32)
	NEXTROW(Y4, Y5, 32)
	ADDROW(Y6, Y7, 32)
	VZEROUPPER
	RET

// ADD8X32C adds an 8×32 block's sums (Z0–Z15) into C's eight rows of 32
// at DX, R8 bytes apart; add8x32 and add8x32rows share it.
#define ADD8X32C \
	NEXTROW(Z0, Z1, 64); \
	NEXTROW(Z2, Z3, 64); \
	NEXTROW(Z4, Z5, 64); \
	NEXTROW(Z6, Z7, 64); \
	NEXTROW(Z8, Z9, 64); \
	NEXTROW(Z10, Z11, 64); \
	NEXTROW(Z12, Z13, 64); \
	ADDROW(Z14, Z15, 64)

// func add8x32(a, b *float32, kc, lda, ldb int, c *float32, ldc int)
//
// AVX-512: an 8×32 block in sixteen ZMM accumulators, each element one
// FMA chain from zero with p in order (the same sums as add4x16), then
// added into C's rows. Step p reads a's eight floats at a+p·lda and b's
// thirty-two at b+p·ldb: a packed strip (lda 8, ldb 32) or the matrices
// in place.
TEXT ·add8x32(SB), NOSPLIT, $0-56
	FRAME8X32
	ZERO_Z0_Z15

loop8:
	STEP8X32(0(SI), 4(SI), 8(SI), 12(SI), 16(SI), 20(SI), 24(SI), 28(SI))
	ADDQ R9, SI
	ADDQ R10, DI
	DECQ CX
	JNZ loop8

	ADD8X32C
	VZEROUPPER
	RET

// func add8x32rows(a, b *float32, kc, lda, ldb int, c *float32, ldc int)
//
// add8x32 with A read in place by rows: step p takes row ii's element at
// a+ii·lda+p (an untransposed A, lda floats a row) and b's thirty-two at
// b+p·ldb; the same FMA chains in the same order.
TEXT ·add8x32rows(SB), NOSPLIT, $0-56
	FRAME8X32
	LEAQ (R9)(R9*2), R11
	LEAQ (SI)(R9*4), R12
	ZERO_Z0_Z15

rows8:
	STEP8X32((SI), (SI)(R9*1), (SI)(R9*2), (SI)(R11*1), (R12), (R12)(R9*1), (R12)(R9*2), (R12)(R11*1))
	ADDQ $4, SI
	ADDQ $4, R12
	ADDQ R10, DI
	DECQ CX
	JNZ rows8

	ADD8X32C
	VZEROUPPER
	RET

// FMA4(S, T, D0, D1, D2, D3) is four independent FMAs, Dk += S·T.
#define FMA4(S, T, D0, D1, D2, D3) \
	VFMADD231PS S, T, D0; \
	VFMADD231PS S, T, D1; \
	VFMADD231PS S, T, D2; \
	VFMADD231PS S, T, D3

// PEAK(loop, ZERO, ROUND) is the peak kernels' body: ZERO clears the
// accumulators and the FMAs' sources, then CX rounds of ROUND's
// independent FMAs.
#define PEAK(loop, ZERO, ROUND) \
	ZERO; \
loop: \
	ROUND; \
	DECQ CX; \
	JNZ loop; \
	VZEROUPPER; \
	RET

// AVX2: twelve accumulators, Y0–Y11, from Y14·Y15.
#define ZERO_PEAK2 \
	ZERO_Y0_Y7; \
	CLEAR4(VXORPS, Y8, Y9, Y10, Y11); \
	VXORPS Y14, Y14, Y14; \
	VXORPS Y15, Y15, Y15

#define ROUND_PEAK2 \
	FMA4(Y14, Y15, Y0, Y1, Y2, Y3); \
	FMA4(Y14, Y15, Y4, Y5, Y6, Y7); \
	FMA4(Y14, Y15, Y8, Y9, Y10, Y11)

// AVX-512: sixteen accumulators, Z0–Z15, from Z30·Z31.
#define ZERO_PEAK5 \
	ZERO_Z0_Z15; \
	VPXORD Z30, Z30, Z30; \
	VPXORD Z31, Z31, Z31

#define ROUND_PEAK5 \
	FMA4(Z30, Z31, Z0, Z1, Z2, Z3); \
	FMA4(Z30, Z31, Z4, Z5, Z6, Z7); \
	FMA4(Z30, Z31, Z8, Z9, Z10, Z11); \
	FMA4(Z30, Z31, Z12, Z13, Z14, Z15)

// func peakAVX2(n int)
//
// n rounds of 12 independent 8-wide FMAs (192 FLOPs a round): the core's
// fp32 peak with 256-bit vectors.
TEXT ·peakAVX2(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	PEAK(peak2, ZERO_PEAK2, ROUND_PEAK2)

// func peakAVX512(n int)
//
// n rounds of 16 independent 16-wide FMAs (512 FLOPs a round).
TEXT ·peakAVX512(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	PEAK(peak5, ZERO_PEAK5, ROUND_PEAK5)

// The vector sums run over n floats in rounds of four vectors, 4·W
// bytes, with CX = n>>SHIFT rounds (SHIFT: log2 of the floats a round).
// LOAD4(V0, V1, V2, V3, W, M) loads a round's four vectors at M, a memory
// operand without its offset ((DI), or (SI)(DX*1) for the round at DX);
// ADD4 adds M's four to them; STORE4 writes them to M.
#define LOAD4(V0, V1, V2, V3, W, M) \
	VMOVUPS 0 M, V0; \
	VMOVUPS W M, V1; \
	VMOVUPS (2*W) M, V2; \
	VMOVUPS (3*W) M, V3

#define ADD4(V0, V1, V2, V3, W, M) \
	VADDPS 0 M, V0, V0; \
	VADDPS W M, V1, V1; \
	VADDPS (2*W) M, V2, V2; \
	VADDPS (3*W) M, V3, V3

#define STORE4(V0, V1, V2, V3, W, M) \
	VMOVUPS V0, 0 M; \
	VMOVUPS V1, W M; \
	VMOVUPS V2, (2*W) M; \
	VMOVUPS V3, (3*W) M

// SUMS(loop, SHIFT, V0, V1, V2, V3, W, BOTH) is a vector sum's body over
// its frame (a, b, n): it adds the rounds at b (SI) into those at a (DI)
// and, when BOTH is STORE4, writes the sums back to b too (sumBoth); with
// BOTH SKIP4 it leaves b alone (add).
#define SKIP4(V0, V1, V2, V3, W, M)

#define SUMS(loop, SHIFT, V0, V1, V2, V3, W, BOTH) \
	FRAMESUMS; \
	SHRQ $SHIFT, CX; \
loop: \
	LOAD4(V0, V1, V2, V3, W, (DI)); \
	ADD4(V0, V1, V2, V3, W, (SI)); \
	STORE4(V0, V1, V2, V3, W, (DI)); \
	BOTH(V0, V1, V2, V3, W, (SI)); \
	ADDQ $(4*W), DI; \
	ADDQ $(4*W), SI; \
	DECQ CX; \
	JNZ loop; \
	VZEROUPPER; \
	RET

// func add32(a, b *float32, n int)
//
// a[i] += b[i] for n floats, n a positive multiple of 32 (AVX2).
TEXT ·add32(SB), NOSPLIT, $0-24
	SUMS(addloop2, 5, Y0, Y1, Y2, Y3, 32, SKIP4)

// func add64(a, b *float32, n int)
//
// a[i] += b[i] for n floats, n a positive multiple of 64 (AVX-512).
TEXT ·add64(SB), NOSPLIT, $0-24
	SUMS(addloop5, 6, Z0, Z1, Z2, Z3, 64, SKIP4)

// BCAST(C, Z) fills Z with the float32 whose bits are C.
#define BCAST(C, Z) \
	MOVL $C, AX; \
	VPBROADCASTD AX, Z

// func expSub16(dst, src *float32, n int, shift float32)
//
// dst[i] = exp(src[i] − shift) for n floats, n a positive multiple of 16
// (AVX-512): n = round(x·log2 e), r = x − n·ln 2 in two parts, a degree-7
// Taylor polynomial for e^r (|r| ≤ ln2/2: relative error below 1e-8), then
// VSCALEFPS by 2^n. x is clamped to [−105, 88.72] first (beyond them the
// result is 0 or +Inf anyway); NaN stays NaN.
TEXT ·expSub16(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	VBROADCASTSS shift+24(FP), Z15
	BCAST(0x3fb8aa3b, Z14)
	BCAST(0x3f317200, Z13)
	BCAST(0x35bfbe8e, Z12)
	BCAST(0x42b17218, Z11)
	BCAST(0xc2d20000, Z10)
	BCAST(0x39500d01, Z9)
	BCAST(0x3ab60b61, Z8)
	BCAST(0x3c088889, Z7)
	BCAST(0x3d2aaaab, Z6)
	BCAST(0x3e2aaaab, Z5)
	BCAST(0x3f000000, Z4)
	BCAST(0x3f800000, Z3)

exploop:
	VMOVUPS (SI), Z0
	VSUBPS Z15, Z0, Z0
	VMINPS Z0, Z11, Z0
	VMAXPS Z0, Z10, Z0
	VMULPS Z14, Z0, Z1
	VRNDSCALEPS $0, Z1, Z1
	VFNMADD231PS Z13, Z1, Z0
	VFNMADD231PS Z12, Z1, Z0
	VMOVAPS Z9, Z2
	VFMADD213PS Z8, Z0, Z2
	VFMADD213PS Z7, Z0, Z2
	VFMADD213PS Z6, Z0, Z2
	VFMADD213PS Z5, Z0, Z2
	VFMADD213PS Z4, Z0, Z2
	VFMADD213PS Z3, Z0, Z2
	VFMADD213PS Z3, Z0, Z2
	VSCALEFPS Z1, Z2, Z2
	VMOVUPS Z2, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ exploop
	VZEROUPPER
	RET

// func sumBoth64(a, b *float32, n int)
//
// a[i] = b[i] = a[i] + b[i] for n floats, n a positive multiple of 64 (AVX-512).
TEXT ·sumBoth64(SB), NOSPLIT, $0-24
	SUMS(sumloop5, 6, Z0, Z1, Z2, Z3, 64, STORE4)

// func sumBoth32(a, b *float32, n int)
//
// sumBoth64 with AVX2, n a positive multiple of 32.
TEXT ·sumBoth32(SB), NOSPLIT, $0-24
	SUMS(sumloop2, 5, Y0, Y1, Y2, Y3, 32, STORE4)

// EACH(top, done, N, LIST, P, OP, V0, V1, V2, V3, W) runs
// OP(V0, V1, V2, V3, W, (P)(DX*1)) on the round at DX of each pointer
// LIST[BX], for BX up from its value to N, P holding the pointer; top
// and done are its labels.
#define EACH(top, done, N, LIST, P, OP, V0, V1, V2, V3, W) \
top: \
	CMPQ BX, N; \
	JGE done; \
	MOVQ (LIST)(BX*8), P; \
	OP(V0, V1, V2, V3, W, (P)(DX*1)); \
	INCQ BX; \
	JMP top

// REDUCEFAN(SHIFT, V0, V1, V2, V3, W, loop, in, out, st, next) is
// reduceFan over its frame, n>>SHIFT rounds at DX: it sums a round over the nin
// (R9) inputs in ins (R8), then stores it to the nout (R11) outputs in
// outs (R10). loop, in, out, st and next are its labels.
#define REDUCEFAN(SHIFT, V0, V1, V2, V3, W, loop, in, out, st, next) \
	FRAMEFAN; \
	SHRQ $SHIFT, CX; \
	XORQ DX, DX; \
loop: \
	MOVQ (R8), SI; \
	LOAD4(V0, V1, V2, V3, W, (SI)(DX*1)); \
	MOVQ $1, BX; \
	EACH(in, out, R9, R8, SI, ADD4, V0, V1, V2, V3, W); \
out: \
	XORQ BX, BX; \
	EACH(st, next, R11, R10, DI, STORE4, V0, V1, V2, V3, W); \
next: \
	ADDQ $(4*W), DX; \
	DECQ CX; \
	JNZ loop; \
	VZEROUPPER; \
	RET

// func reduceFan64(ins *unsafe.Pointer, nin int, outs *unsafe.Pointer, nout int, n int)
//
// For every element e < n (n a positive multiple of 64): s = ins[0][e] +
// ins[1][e] + … + ins[nin−1][e], added left to right, written to
// outs[k][e] for every k (AVX-512, 64 floats a round: every input of a
// round is read before any output of it is written).
TEXT ·reduceFan64(SB), NOSPLIT, $0-40
	REDUCEFAN(6, Z0, Z1, Z2, Z3, 64, fanloop5, fanin5, fanout5, fanst5, fannext5)

// func reduceFan32(ins *unsafe.Pointer, nin int, outs *unsafe.Pointer, nout int, n int)
//
// reduceFan64 with AVX2, n a positive multiple of 32.
TEXT ·reduceFan32(SB), NOSPLIT, $0-40
	REDUCEFAN(5, Y0, Y1, Y2, Y3, 32, fanloop2, fanin2, fanout2, fanst2, fannext2)
