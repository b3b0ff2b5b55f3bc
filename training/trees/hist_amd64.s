#include "textflag.h"

// func histAVX2(h, gh []float64, rows []int32, col, leaf []uint8, slot, stride, k2 int)
TEXT ·histAVX2(SB), NOSPLIT, $0-144
	MOVQ h_base+0(FP), DI
	MOVQ gh_base+24(FP), SI
	MOVQ rows_base+48(FP), R8
	MOVQ rows_len+56(FP), R9
	MOVQ col_base+72(FP), R10
	MOVQ leaf_base+96(FP), R11
	MOVQ slot+120(FP), R12
	MOVQ stride+128(FP), R13
	MOVQ k2+136(FP), R14

row:
	TESTQ R9, R9
	JZ    done
	MOVLQSX (R8), AX          // i
	MOVBQZX (R10)(AX*1), BX   // col[i]
	MOVBQZX (R11)(AX*1), CX   // leaf[i]
	ORQ     R12, CX           // | slot
	IMULQ   R13, BX
	ADDQ    CX, BX
	IMULQ   R14, BX
	LEAQ    (DI)(BX*8), BX    // &h[o]
	IMULQ   R14, AX
	LEAQ    (SI)(AX*8), DX    // &gh[i*k2]
	MOVQ    R14, CX

four:
	CMPQ    CX, $4
	JB      two
	VMOVUPD (BX), Y0
	VADDPD  (DX), Y0, Y0      // h + g: IEEE addition commutes, bit for bit
	VMOVUPD Y0, (BX)
	ADDQ    $32, BX
	ADDQ    $32, DX
	SUBQ    $4, CX
	JMP     four

two:
	TESTQ   CX, CX
	JZ      next
	VMOVUPD (BX), X0
	VADDPD  (DX), X0, X0
	VMOVUPD X0, (BX)
	ADDQ    $16, BX
	ADDQ    $16, DX
	SUBQ    $2, CX
	JMP     two

next:
	ADDQ $4, R8
	DECQ R9
	JMP  row

done:
	VZEROUPPER
	RET
