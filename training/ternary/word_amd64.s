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

// One 16-margin chunk of addColumn512: the margins at off(DI), the sign
// bits in R10's low 16 (shifted out after), the zone mask ORed into R12
// at bit sh.
#define ADDCHUNK(off, sh) \
	KMOVW     R10, K1; \
	VMOVDQU32 off(DI), Z0; \
	VPBLENDMD Z1, Z2, K1, Z5; \
	VPADDD    Z5, Z0, Z6; \
	VMOVDQU32 Z6, off(DI); \
	VPSUBD    Z3, Z0, Z7; \
	VPCMPUD   $1, Z4, Z7, K2; \
	KMOVW     K2, R11; \
	SHLQ      $sh, R11; \
	ORQ       R11, R12; \
	SHRQ      $16, R10

// func addColumn512(m *int32, col, y *uint64, words int, delta, zlo int32, zw uint32, hits *uint64)
//
// addWord for words full words of 64 margins, sixteen at a time in
// AVX-512: margin i += delta where bit i of ^(col ^ y) is set, else
// −delta, and hits[w] gets the mask of word w's samples whose old margin
// was in the zone [zlo, zlo+zw) (the unsigned distance, as addWord).
TEXT ·addColumn512(SB), NOSPLIT, $0-56
	MOVQ         m+0(FP), DI
	MOVQ         col+8(FP), SI
	MOVQ         y+16(FP), DX
	MOVQ         words+24(FP), CX
	MOVL         delta+32(FP), AX
	MOVL         zlo+36(FP), BX
	MOVL         zw+40(FP), R8
	MOVQ         hits+48(FP), R9
	MOVL         AX, X1
	VPBROADCASTD X1, Z1        // +delta
	NEGL         AX
	MOVL         AX, X2
	VPBROADCASTD X2, Z2        // −delta
	MOVL         BX, X3
	VPBROADCASTD X3, Z3        // zlo
	MOVL         R8, X4
	VPBROADCASTD X4, Z4        // zw

word:
	TESTQ CX, CX
	JZ    done
	MOVQ  (SI), R10
	XORQ  (DX), R10
	NOTQ  R10                  // c: bit set where y_i z_ij = +1
	XORQ  R12, R12             // this word's zone mask
	ADDCHUNK(0, 0)
	ADDCHUNK(64, 16)
	ADDCHUNK(128, 32)
	ADDCHUNK(192, 48)
	MOVQ  R12, (R9)
	ADDQ  $256, DI
	ADDQ  $8, SI
	ADDQ  $8, DX
	ADDQ  $8, R9
	DECQ  CX
	JMP   word

done:
	VZEROUPPER
	RET

// func deepAgree512(deep, col, y *uint64, n int) int
//
// deepAgreeAVX2 eight words at a time with VPOPCNTQ (AVX-512
// VPOPCNTDQ); the words left over one at a time.
TEXT ·deepAgree512(SB), NOSPLIT, $0-40
	MOVQ   deep+0(FP), SI
	MOVQ   col+8(FP), DI
	MOVQ   y+16(FP), DX
	MOVQ   n+24(FP), CX
	VPXORQ Z0, Z0, Z0          // eight running counts
	XORQ   AX, AX              // the leftover words' count

eight:
	CMPQ      CX, $8
	JB        rest
	VMOVDQU64 (DI), Z1
	VPXORQ    (DX), Z1, Z1     // col ^ y
	VPANDNQ   (SI), Z1, Z1     // deep &^ (col ^ y)
	VPOPCNTQ  Z1, Z1
	VPADDQ    Z1, Z0, Z0
	ADDQ      $64, SI
	ADDQ      $64, DI
	ADDQ      $64, DX
	SUBQ      $8, CX
	JMP       eight

rest:
	TESTQ   CX, CX
	JZ      sum
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
	JMP     rest

sum:
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDQ        Y1, Y0, Y0
	VEXTRACTI128  $1, Y0, X1
	VPADDQ        X1, X0, X0
	VPSHUFD       $0x4e, X0, X1
	VPADDQ        X1, X0, X0
	MOVQ          X0, BX
	ADDQ          BX, AX
	VZEROUPPER
	MOVQ          AX, ret+32(FP)
	RET
