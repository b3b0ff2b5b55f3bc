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

// The popcount of each nibble, twice (one table per 128-bit lane).
DATA nibbleCount<>+0(SB)/8, $0x0302020102010100
DATA nibbleCount<>+8(SB)/8, $0x0403030203020201
DATA nibbleCount<>+16(SB)/8, $0x0302020102010100
DATA nibbleCount<>+24(SB)/8, $0x0403030203020201
GLOBL nibbleCount<>(SB), RODATA|NOPTR, $32

// func deepAgreeAVX2(deep, col, y *uint64, n int) int
TEXT ·deepAgreeAVX2(SB), NOSPLIT, $0-40
	MOVQ         deep+0(FP), SI
	MOVQ         col+8(FP), DI
	MOVQ         y+16(FP), DX
	MOVQ         n+24(FP), CX
	VMOVDQU      nibbleCount<>(SB), Y6
	MOVL         $0x0f0f0f0f, AX
	MOVL         AX, X7
	VPBROADCASTD X7, Y7        // low nibble mask
	VPXOR        Y5, Y5, Y5    // zero
	VPXOR        Y0, Y0, Y0    // four running counts
	XORQ         AX, AX        // the leftover words' count

four:
	CMPQ      CX, $4
	JB        left
	VMOVDQU   (DI), Y1
	VPXOR     (DX), Y1, Y1     // col ^ y
	VPANDN    (SI), Y1, Y1     // deep &^ (col ^ y)
	VPAND     Y7, Y1, Y2       // low nibbles
	VPSRLW    $4, Y1, Y3
	VPAND     Y7, Y3, Y3       // high nibbles
	VPSHUFB   Y2, Y6, Y2
	VPSHUFB   Y3, Y6, Y3
	VPADDB    Y2, Y3, Y2       // each byte's count
	VPSADBW   Y5, Y2, Y2       // summed per word
	VPADDQ    Y2, Y0, Y0
	ADDQ      $32, SI
	ADDQ      $32, DI
	ADDQ      $32, DX
	SUBQ      $4, CX
	JMP       four

left:
	TESTQ   CX, CX
	JZ      total
	MOVQ    (DI), BX
	XORQ    (DX), BX
	NOTQ    BX
	ANDQ    (SI), BX
	POPCNTQ BX, BX
	ADDQ    BX, AX
	ADDQ    $8, SI
	ADDQ    $8, DI
	ADDQ    $8, DX
	DECQ    CX
	JMP     left

total:
	VEXTRACTI128 $1, Y0, X1
	VPADDQ       X1, X0, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDQ       X1, X0, X0
	MOVQ         X0, BX
	ADDQ         BX, AX
	VZEROUPPER
	MOVQ         AX, ret+32(FP)
	RET
