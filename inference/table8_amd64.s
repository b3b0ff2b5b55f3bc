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
