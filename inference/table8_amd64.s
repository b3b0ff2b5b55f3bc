#include "textflag.h"

// T8FWHT runs FWHT's stages h = 1, 2, 4 on the eight lanes of V into T
// (V is clobbered): per stage S = V with each lane's partner swapped in,
// then S + V·M_h with M_h = +1 in the lower lane of each pair and −1 in
// the upper (Y13–Y15 for h = 1, 2, 4), one FMA: the product is exact, so
// its one rounding is fl(x[j] + x[j+h]) in the lower lane and
// fl(x[j] − x[j+h]) in the upper, the reference loop's sums.
#define T8FWHT(V, T) \
	VPERMILPS $0xB1, V, T; \
	VFMADD231PS Y13, V, T; \
	VPERMILPS $0x4E, T, V; \
	VFMADD231PS Y14, T, V; \
	VPERM2F128 $0x01, V, V, T; \
	VFMADD231PS Y15, V, T

// T8MASKS loads M_1, M_2, M_4 from the pointer in AX.
#define T8MASKS \
	VMOVUPS 0(AX), Y13; \
	VMOVUPS 32(AX), Y14; \
	VMOVUPS 64(AX), Y15

// func table8AVX2(t *[128]float32, x []float32, signs *[16][8]float32, masks *[3][8]float32)
//
// table8: row m of t is FWHT(x∘signs[m]) for m = 0…15 (len(x) = 8).
TEXT ·table8AVX2(SB), NOSPLIT, $0-48
	MOVQ masks+40(FP), AX
	T8MASKS
	MOVQ t+0(FP), DI
	MOVQ x_base+8(FP), SI
	MOVQ signs+32(FP), R8
	VMOVUPS (SI), Y8
	MOVQ $16, CX

t8_row:
	VMULPS (R8), Y8, Y0
	T8FWHT(Y0, Y1)
	VMOVUPS Y1, (DI)
	ADDQ $32, R8
	ADDQ $32, DI
	DECQ CX
	JNZ  t8_row
	VZEROUPPER
	RET

// func blocks8AVX2(u []float32, t *[128]float32, row, p8 []int32, g8 []float32, masks *[3][8]float32)
//
// block8 for nb = len(row) consecutive blocks, block k into u[8k:]: lane l
// of b is g8[8k+l]·t[row[k] + p8[8k+l]] (VPERMPS from the block's table
// row: it reads the low three bits of p8), then FWHT(b) by T8FWHT.
TEXT ·blocks8AVX2(SB), NOSPLIT, $0-112
	MOVQ masks+104(FP), AX
	T8MASKS
	MOVQ u_base+0(FP), DI
	MOVQ t+24(FP), SI
	MOVQ row_base+32(FP), R8
	MOVQ row_len+40(FP), CX
	MOVQ p8_base+56(FP), R9
	MOVQ g8_base+80(FP), R10
	XORQ BX, BX
	SUBQ $2, CX
	JB   b8_one

b8_two:
	MOVLQSX 0(R8), AX
	MOVLQSX 4(R8), DX
	VMOVDQU 0(R9)(BX*1), Y1
	VMOVDQU 32(R9)(BX*1), Y3
	VPERMPS (SI)(AX*4), Y1, Y0
	VPERMPS (SI)(DX*4), Y3, Y2
	VMULPS  0(R10)(BX*1), Y0, Y0
	VMULPS  32(R10)(BX*1), Y2, Y2
	T8FWHT(Y0, Y1)
	T8FWHT(Y2, Y3)
	VMOVUPS Y1, 0(DI)(BX*1)
	VMOVUPS Y3, 32(DI)(BX*1)
	ADDQ $8, R8
	ADDQ $64, BX
	SUBQ $2, CX
	JAE  b8_two

b8_one:
	ADDQ $2, CX
	JZ   b8_end
	MOVLQSX 0(R8), AX
	VMOVDQU 0(R9)(BX*1), Y1
	VPERMPS (SI)(AX*4), Y1, Y0
	VMULPS  0(R10)(BX*1), Y0, Y0
	T8FWHT(Y0, Y1)
	VMOVUPS Y1, 0(DI)(BX*1)

b8_end:
	VZEROUPPER
	RET

// T16FWHT is T8FWHT on both 256-bit halves of a 16-lane V (masks in
// Z13–Z15, each the 8-lane one twice; the stage h = 4 partner is the other
// 128-bit quarter of the same half).
#define T16FWHT(V, T) \
	VPERMILPS $0xB1, V, T; \
	VFMADD231PS Z13, V, T; \
	VPERMILPS $0x4E, T, V; \
	VFMADD231PS Z14, T, V; \
	VSHUFF32X4 $0xB1, V, V, T; \
	VFMADD231PS Z15, V, T

// func blocks8AVX512(u []float32, t *[128]float32, row, p8 []int32, g8 []float32, masks *[3][8]float32)
//
// blocks8AVX2 with two blocks in each 16-lane vector, eight blocks a step
// (then four, two, one): the pair's table rows loaded into two registers,
// and the second block's indices p8 have bit 4 set (initTable8), so one
// VPERMT2PS gathers both from the 32 lanes. The first block must be even;
// a last odd one runs 8 lanes wide.
TEXT ·blocks8AVX512(SB), NOSPLIT, $0-112
	MOVQ masks+104(FP), AX
	VBROADCASTF32X8 0(AX), Z13
	VBROADCASTF32X8 32(AX), Z14
	VBROADCASTF32X8 64(AX), Z15
	MOVQ u_base+0(FP), DI
	MOVQ t+24(FP), SI
	MOVQ row_base+32(FP), R8
	MOVQ row_len+40(FP), CX
	MOVQ p8_base+56(FP), R9
	MOVQ g8_base+80(FP), R10
	XORQ BX, BX
	SUBQ $8, CX // blocks left − 8
	JB   z8_four_q

z8_eight:
	MOVLQSX 0(R8), AX
	MOVLQSX 4(R8), DX
	MOVLQSX 8(R8), R11
	MOVLQSX 12(R8), R12
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS (SI)(DX*4), Y4
	VMOVUPS (SI)(R11*4), Y2
	VMOVUPS (SI)(R12*4), Y5
	MOVLQSX 16(R8), AX
	MOVLQSX 20(R8), DX
	MOVLQSX 24(R8), R11
	MOVLQSX 28(R8), R12
	VMOVUPS (SI)(AX*4), Y6
	VMOVUPS (SI)(DX*4), Y8
	VMOVUPS (SI)(R11*4), Y10
	VMOVUPS (SI)(R12*4), Y9
	VMOVDQU32 0(R9)(BX*1), Z1
	VMOVDQU32 64(R9)(BX*1), Z3
	VMOVDQU32 128(R9)(BX*1), Z7
	VMOVDQU32 192(R9)(BX*1), Z11
	VPERMT2PS Z4, Z1, Z0
	VPERMT2PS Z5, Z3, Z2
	VPERMT2PS Z8, Z7, Z6
	VPERMT2PS Z9, Z11, Z10
	VMULPS  0(R10)(BX*1), Z0, Z0
	VMULPS  64(R10)(BX*1), Z2, Z2
	VMULPS  128(R10)(BX*1), Z6, Z6
	VMULPS  192(R10)(BX*1), Z10, Z10
	T16FWHT(Z0, Z1)
	T16FWHT(Z2, Z3)
	T16FWHT(Z6, Z7)
	T16FWHT(Z10, Z11)
	VMOVUPS Z1, 0(DI)(BX*1)
	VMOVUPS Z3, 64(DI)(BX*1)
	VMOVUPS Z7, 128(DI)(BX*1)
	VMOVUPS Z11, 192(DI)(BX*1)
	ADDQ $32, R8
	ADDQ $256, BX
	SUBQ $8, CX
	JAE  z8_eight

z8_four_q:
	ADDQ $4, CX // blocks left − 4
	JL   z8_two

z8_four:
	MOVLQSX 0(R8), AX
	MOVLQSX 4(R8), DX
	MOVLQSX 8(R8), R11
	MOVLQSX 12(R8), R12
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS (SI)(DX*4), Y4
	VMOVUPS (SI)(R11*4), Y2
	VMOVUPS (SI)(R12*4), Y5
	VMOVDQU32 0(R9)(BX*1), Z1
	VMOVDQU32 64(R9)(BX*1), Z3
	VPERMT2PS Z4, Z1, Z0
	VPERMT2PS Z5, Z3, Z2
	VMULPS  0(R10)(BX*1), Z0, Z0
	VMULPS  64(R10)(BX*1), Z2, Z2
	T16FWHT(Z0, Z1)
	T16FWHT(Z2, Z3)
	VMOVUPS Z1, 0(DI)(BX*1)
	VMOVUPS Z3, 64(DI)(BX*1)
	ADDQ $16, R8
	ADDQ $128, BX
	SUBQ $4, CX

z8_two:
	ADDQ $4, CX // blocks left
	CMPQ CX, $2
	JB   z8_one
	MOVLQSX 0(R8), AX
	MOVLQSX 4(R8), DX
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS (SI)(DX*4), Y4
	VMOVDQU32 0(R9)(BX*1), Z1
	VPERMT2PS Z4, Z1, Z0
	VMULPS  0(R10)(BX*1), Z0, Z0
	T16FWHT(Z0, Z1)
	VMOVUPS Z1, 0(DI)(BX*1)
	ADDQ $8, R8
	ADDQ $64, BX
	SUBQ $2, CX

z8_one:
	TESTQ CX, CX
	JZ    z8_end
	MOVLQSX 0(R8), AX
	VMOVDQU 0(R9)(BX*1), Y1
	VPERMPS (SI)(AX*4), Y1, Y0
	VMULPS  0(R10)(BX*1), Y0, Y0
	T8FWHT(Y0, Y1)
	VMOVUPS Y1, 0(DI)(BX*1)

z8_end:
	VZEROUPPER
	RET

// func table16ShiftsAVX2(t *[1280]float32, idx *[8][8]int32)
//
// table16Shifts: row 8m + δ of the shifted part (from 1024 bytes on) is
// upper row m (from 512) permuted by idx[δ] (lane j takes j ⊕ δ).
TEXT ·table16ShiftsAVX2(SB), NOSPLIT, $0-16
	MOVQ t+0(FP), SI
	MOVQ idx+8(FP), R8
	LEAQ 1024(SI), DI
	ADDQ $512, SI
	VMOVDQU 0(R8), Y8
	VMOVDQU 32(R8), Y9
	VMOVDQU 64(R8), Y10
	VMOVDQU 96(R8), Y11
	VMOVDQU 128(R8), Y12
	VMOVDQU 160(R8), Y13
	VMOVDQU 192(R8), Y14
	VMOVDQU 224(R8), Y15
	MOVQ $16, CX

s16_row:
	VMOVUPS (SI), Y0
	VMOVUPS Y0, 0(DI)
	VPERMPS Y0, Y9, Y1
	VMOVUPS Y1, 32(DI)
	VPERMPS Y0, Y10, Y2
	VMOVUPS Y2, 64(DI)
	VPERMPS Y0, Y11, Y3
	VMOVUPS Y3, 96(DI)
	VPERMPS Y0, Y12, Y4
	VMOVUPS Y4, 128(DI)
	VPERMPS Y0, Y13, Y5
	VMOVUPS Y5, 160(DI)
	VPERMPS Y0, Y14, Y6
	VMOVUPS Y6, 192(DI)
	VPERMPS Y0, Y15, Y7
	VMOVUPS Y7, 224(DI)
	ADDQ $32, SI
	ADDQ $256, DI
	DECQ CX
	JNZ  s16_row
	VZEROUPPER
	RET

// T16STAGE8 is FWHT's stage h = 8 on a 16-lane T into V: V = T with its
// halves swapped, then V + T·M_8 (Z12: +1 in the lower half, −1 in the
// upper), fl(x[j] ± x[j+8]) as T8FWHT's stages.
#define T16STAGE8(T, V) \
	VSHUFF32X4 $0x4E, T, T, V; \
	VFMADD231PS Z12, T, V

// func blocks16AVX512(u []float32, t *[1280]float32, row, hi, p16 []int32, g16 []float32, masks *[3][8]float32, m8 *[16]float32)
//
// block16 for nb = len(row) consecutive blocks, block k into u[16k:]: the
// lower row (at row[k]) and the shifted upper row (at 1024 bytes + hi[k]·4)
// broadcast to both halves, C = lower + upper·M_8 (one FMA: the sum in
// the lower half, the difference in the upper), lane l of b is
// g16[16k+l]·C[p16[16k+l]] (one VPERMPS), then FWHT(b): T16FWHT's stages
// h = 1, 2, 4 in each half and T16STAGE8. Four blocks a step, then two,
// one.
TEXT ·blocks16AVX512(SB), NOSPLIT, $0-144
	MOVQ masks+128(FP), AX
	VBROADCASTF32X8 0(AX), Z13
	VBROADCASTF32X8 32(AX), Z14
	VBROADCASTF32X8 64(AX), Z15
	MOVQ m8+136(FP), AX
	VMOVUPS (AX), Z12
	MOVQ u_base+0(FP), DI
	MOVQ t+24(FP), SI
	LEAQ 1024(SI), R12
	MOVQ row_base+32(FP), R8
	MOVQ row_len+40(FP), CX
	MOVQ hi_base+56(FP), R11
	MOVQ p16_base+80(FP), R9
	MOVQ g16_base+104(FP), R10
	XORQ BX, BX
	SUBQ $4, CX // blocks left − 4
	JB   z16_two_q

z16_four:
	MOVLQSX 0(R8), AX
	MOVLQSX 0(R11), DX
	MOVLQSX 4(R8), R13
	MOVLQSX 4(R11), R14
	VBROADCASTF32X8 (SI)(AX*4), Z0
	VBROADCASTF32X8 (R12)(DX*4), Z1
	VBROADCASTF32X8 (SI)(R13*4), Z2
	VBROADCASTF32X8 (R12)(R14*4), Z3
	MOVLQSX 8(R8), AX
	MOVLQSX 8(R11), DX
	MOVLQSX 12(R8), R13
	MOVLQSX 12(R11), R14
	VBROADCASTF32X8 (SI)(AX*4), Z4
	VBROADCASTF32X8 (R12)(DX*4), Z5
	VBROADCASTF32X8 (SI)(R13*4), Z6
	VBROADCASTF32X8 (R12)(R14*4), Z7
	VFMADD231PS Z12, Z1, Z0
	VFMADD231PS Z12, Z3, Z2
	VFMADD231PS Z12, Z5, Z4
	VFMADD231PS Z12, Z7, Z6
	VMOVDQU32 0(R9)(BX*1), Z1
	VMOVDQU32 64(R9)(BX*1), Z3
	VMOVDQU32 128(R9)(BX*1), Z5
	VMOVDQU32 192(R9)(BX*1), Z7
	VPERMPS Z0, Z1, Z0
	VPERMPS Z2, Z3, Z2
	VPERMPS Z4, Z5, Z4
	VPERMPS Z6, Z7, Z6
	VMULPS  0(R10)(BX*1), Z0, Z0
	VMULPS  64(R10)(BX*1), Z2, Z2
	VMULPS  128(R10)(BX*1), Z4, Z4
	VMULPS  192(R10)(BX*1), Z6, Z6
	T16FWHT(Z0, Z1)
	T16FWHT(Z2, Z3)
	T16FWHT(Z4, Z5)
	T16FWHT(Z6, Z7)
	T16STAGE8(Z1, Z0)
	T16STAGE8(Z3, Z2)
	T16STAGE8(Z5, Z4)
	T16STAGE8(Z7, Z6)
	VMOVUPS Z0, 0(DI)(BX*1)
	VMOVUPS Z2, 64(DI)(BX*1)
	VMOVUPS Z4, 128(DI)(BX*1)
	VMOVUPS Z6, 192(DI)(BX*1)
	ADDQ $16, R8
	ADDQ $16, R11
	ADDQ $256, BX
	SUBQ $4, CX
	JAE  z16_four

z16_two_q:
	ADDQ $2, CX // blocks left − 2
	JL   z16_one

z16_two:
	MOVLQSX 0(R8), AX
	MOVLQSX 0(R11), DX
	MOVLQSX 4(R8), R13
	MOVLQSX 4(R11), R14
	VBROADCASTF32X8 (SI)(AX*4), Z0
	VBROADCASTF32X8 (R12)(DX*4), Z1
	VBROADCASTF32X8 (SI)(R13*4), Z2
	VBROADCASTF32X8 (R12)(R14*4), Z3
	VFMADD231PS Z12, Z1, Z0
	VFMADD231PS Z12, Z3, Z2
	VMOVDQU32 0(R9)(BX*1), Z1
	VMOVDQU32 64(R9)(BX*1), Z3
	VPERMPS Z0, Z1, Z0
	VPERMPS Z2, Z3, Z2
	VMULPS  0(R10)(BX*1), Z0, Z0
	VMULPS  64(R10)(BX*1), Z2, Z2
	T16FWHT(Z0, Z1)
	T16FWHT(Z2, Z3)
	T16STAGE8(Z1, Z0)
	T16STAGE8(Z3, Z2)
	VMOVUPS Z0, 0(DI)(BX*1)
	VMOVUPS Z2, 64(DI)(BX*1)
	ADDQ $8, R8
	ADDQ $8, R11
	ADDQ $128, BX
	SUBQ $2, CX

z16_one:
	ADDQ $2, CX // blocks left
	JZ   z16_end
	MOVLQSX 0(R8), AX
	MOVLQSX 0(R11), DX
	VBROADCASTF32X8 (SI)(AX*4), Z0
	VBROADCASTF32X8 (R12)(DX*4), Z1
	VFMADD231PS Z12, Z1, Z0
	VMOVDQU32 0(R9)(BX*1), Z1
	VPERMPS Z0, Z1, Z0
	VMULPS  0(R10)(BX*1), Z0, Z0
	T16FWHT(Z0, Z1)
	T16STAGE8(Z1, Z0)
	VMOVUPS Z0, 0(DI)(BX*1)

z16_end:
	VZEROUPPER
	RET

// func blocks16AVX2(u []float32, t *[1280]float32, row, hi, p16 []int32, g16 []float32, masks *[3][8]float32)
//
// blocks16AVX512 eight lanes wide: c = lower row + shifted upper row,
// c' = their difference (stage h = 8 of the first transform), each half of
// b from c and c' by two VPERMPS, chosen by bit 3 of p16 (VBLENDVPS on the
// index shifted to the sign bit), times g16; then T8FWHT on each half and
// stage h = 8 across them.
TEXT ·blocks16AVX2(SB), NOSPLIT, $0-136
	MOVQ masks+128(FP), AX
	T8MASKS
	MOVQ u_base+0(FP), DI
	MOVQ t+24(FP), SI
	LEAQ 1024(SI), R12
	MOVQ row_base+32(FP), R8
	MOVQ row_len+40(FP), CX
	MOVQ hi_base+56(FP), R11
	MOVQ p16_base+80(FP), R9
	MOVQ g16_base+104(FP), R10
	TESTQ CX, CX
	JZ    y16_end
	XORQ BX, BX

y16_block:
	MOVLQSX 0(R8), AX
	MOVLQSX 0(R11), DX
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS (R12)(DX*4), Y1
	VADDPS  Y1, Y0, Y2 // c
	VSUBPS  Y1, Y0, Y3 // c'
	VMOVDQU 0(R9)(BX*1), Y4
	VPERMPS Y2, Y4, Y5
	VPERMPS Y3, Y4, Y6
	VPSLLD  $28, Y4, Y4
	VBLENDVPS Y4, Y6, Y5, Y0
	VMOVDQU 32(R9)(BX*1), Y4
	VPERMPS Y2, Y4, Y5
	VPERMPS Y3, Y4, Y6
	VPSLLD  $28, Y4, Y4
	VBLENDVPS Y4, Y6, Y5, Y7
	VMULPS  0(R10)(BX*1), Y0, Y0
	VMULPS  32(R10)(BX*1), Y7, Y7
	T8FWHT(Y0, Y1)
	T8FWHT(Y7, Y2)
	VADDPS  Y2, Y1, Y3
	VSUBPS  Y2, Y1, Y4
	VMOVUPS Y3, 0(DI)(BX*1)
	VMOVUPS Y4, 32(DI)(BX*1)
	ADDQ $4, R8
	ADDQ $4, R11
	ADDQ $64, BX
	DECQ CX
	JNZ  y16_block

y16_end:
	VZEROUPPER
	RET

// func table8AVX512(t *[128]float32, x []float32, signs *[16][8]float32, masks *[3][8]float32)
//
// table8AVX2 two rows at a time: x in both halves of Z8.
TEXT ·table8AVX512(SB), NOSPLIT, $0-48
	MOVQ masks+40(FP), AX
	VBROADCASTF32X8 0(AX), Z13
	VBROADCASTF32X8 32(AX), Z14
	VBROADCASTF32X8 64(AX), Z15
	MOVQ t+0(FP), DI
	MOVQ x_base+8(FP), SI
	MOVQ signs+32(FP), R8
	VBROADCASTF32X8 (SI), Z8
	MOVQ $8, CX

z8t_rows:
	VMULPS (R8), Z8, Z0
	T16FWHT(Z0, Z1)
	VMOVUPS Z1, (DI)
	ADDQ $64, R8
	ADDQ $64, DI
	DECQ CX
	JNZ  z8t_rows
	VZEROUPPER
	RET

// func table16AVX512(t *[1280]float32, x []float32, signs *[16][8]float32, masks *[3][8]float32, idx *[4][16]int32)
//
// table16 with both halves of x at once: row m of each half's table
// (x's 16 lanes times signs[m] in both halves, T16FWHT), the lower one
// stored at t[8m:], the upper at t[128+8m:] and, by four VPERMPS with idx
// (lanes 0–7 of idx[q] are 8 + (j ⊕ 2q), lanes 8–15 8 + (j ⊕ 2q+1)), as
// the shifted rows 8m + δ from t[256:] on.
TEXT ·table16AVX512(SB), NOSPLIT, $0-56
	MOVQ masks+40(FP), AX
	VBROADCASTF32X8 0(AX), Z13
	VBROADCASTF32X8 32(AX), Z14
	VBROADCASTF32X8 64(AX), Z15
	MOVQ idx+48(FP), AX
	VMOVDQU32 0(AX), Z9
	VMOVDQU32 64(AX), Z10
	VMOVDQU32 128(AX), Z11
	VMOVDQU32 192(AX), Z12
	MOVQ t+0(FP), DI
	MOVQ x_base+8(FP), SI
	MOVQ signs+32(FP), R8
	VMOVUPS (SI), Z8
	LEAQ 1024(DI), R9
	MOVQ $16, CX

z16t_rows:
	VBROADCASTF32X8 (R8), Z0
	VMULPS Z8, Z0, Z0
	T16FWHT(Z0, Z1)
	VMOVUPS Y1, (DI)
	VEXTRACTF32X8 $1, Z1, 512(DI)
	VPERMPS Z1, Z9, Z2
	VPERMPS Z1, Z10, Z3
	VPERMPS Z1, Z11, Z4
	VPERMPS Z1, Z12, Z5
	VMOVUPS Z2, 0(R9)
	VMOVUPS Z3, 64(R9)
	VMOVUPS Z4, 128(R9)
	VMOVUPS Z5, 192(R9)
	ADDQ $32, R8
	ADDQ $32, DI
	ADDQ $256, R9
	DECQ CX
	JNZ  z16t_rows
	VZEROUPPER
	RET
