#include "textflag.h"

// func addWord64AVX2(mm *[64]int32, c uint64, tab *[256][8]int32, zlo int32, zw uint32) uint64
TEXT ·addWord64AVX2(SB), NOSPLIT, $0-40
	MOVQ mm+0(FP), DI
	MOVQ c+8(FP), SI
	MOVQ tab+16(FP), DX
	MOVL zlo+24(FP), AX
	MOVL zw+28(FP), BX
	MOVL AX, X1
	VPBROADCASTD X1, Y1        // zlo
	XORL $0x80000000, BX
	MOVL BX, X2
	VPBROADCASTD X2, Y2        // zw with its sign bit flipped
	MOVL $0x80000000, AX
	MOVL AX, X3
	VPBROADCASTD X3, Y3        // the sign bit
	XORQ R8, R8                // hit
	XORQ CX, CX                // q

loop:
	MOVQ      SI, R9
	SHRQ      CX, R9
	ANDQ      $0xff, R9
	SHLQ      $5, R9           // byte(c>>q) · 32 bytes: its tab row
	VMOVDQU   (DI), Y0         // old
	VPADDD    (DX)(R9*1), Y0, Y4
	VMOVDQU   Y4, (DI)         // old + tab
	VPSUBD    Y1, Y0, Y5       // old − zlo
	VPXOR     Y3, Y5, Y5       // unsigned order as signed: flip the sign bits
	VPCMPGTD  Y5, Y2, Y6       // zw > old − zlo (unsigned)
	VMOVMSKPS Y6, R10
	SHLQ      CX, R10
	ORQ       R10, R8
	ADDQ      $32, DI
	ADDQ      $8, CX
	CMPQ      CX, $64
	JB        loop

	VZEROUPPER
	MOVQ R8, ret+32(FP)
	RET
