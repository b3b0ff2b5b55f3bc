#include "textflag.h"

// The popcount of each nibble, twice (one table per 128-bit lane).
DATA nibbleCount<>+0(SB)/8, $0x0302020102010100
DATA nibbleCount<>+8(SB)/8, $0x0403030203020201
DATA nibbleCount<>+16(SB)/8, $0x0302020102010100
DATA nibbleCount<>+24(SB)/8, $0x0403030203020201
GLOBL nibbleCount<>(SB), RODATA|NOPTR, $32

// deepAgree's pieces shared by its AVX2 and AVX-512 forms. DEEPWORD
// counts one leftover word (deep at SI, col at DI, y at DX) into AX;
// DEEPTOTAL adds Y0's four counts to AX and returns it.
#define DEEPWORD \
	MOVQ    (DI), BX; \
	XORQ    (DX), BX; \
	NOTQ    BX; \
	ANDQ    (SI), BX; \
	POPCNTQ BX, BX; \
	ADDQ    BX, AX; \
	ADDQ    $8, SI; \
	ADDQ    $8, DI; \
	ADDQ    $8, DX; \
	DECQ    CX

#define DEEPTOTAL \
	VEXTRACTI128 $1, Y0, X1; \
	VPADDQ       X1, X0, X0; \
	VPSHUFD      $0x4e, X0, X1; \
	VPADDQ       X1, X0, X0; \
	VMOVQ        X0, BX; \
	ADDQ         BX, AX; \
	VZEROUPPER; \
	MOVQ         AX, ret+32(FP); \
	RET

// func deepAgreeAVX2(deep, col, y *uint64, n int) int
TEXT ·deepAgreeAVX2(SB), NOSPLIT, $0-40
	MOVQ         deep+0(FP), SI
	MOVQ         col+8(FP), DI
	MOVQ         y+16(FP), DX
	MOVQ         n+24(FP), CX
	VMOVDQU      nibbleCount<>(SB), Y6
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X7
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
	DEEPWORD
	JMP     left

total:
	DEEPTOTAL

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
	VMOVD        AX, X1
	VPBROADCASTD X1, Z1        // +delta
	NEGL         AX
	VMOVD        AX, X2
	VPBROADCASTD X2, Z2        // −delta
	VMOVD        BX, X3
	VPBROADCASTD X3, Z3        // zlo
	VMOVD        R8, X4
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
	DEEPWORD
	JMP     rest

sum:
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDQ        Y1, Y0, Y0
	DEEPTOTAL

DATA laneBits<>+0(SB)/4, $1
DATA laneBits<>+4(SB)/4, $2
DATA laneBits<>+8(SB)/4, $4
DATA laneBits<>+12(SB)/4, $8
DATA laneBits<>+16(SB)/4, $16
DATA laneBits<>+20(SB)/4, $32
DATA laneBits<>+24(SB)/4, $64
DATA laneBits<>+28(SB)/4, $128
GLOBL laneBits<>(SB), RODATA|NOPTR, $32

// One 8-margin chunk of addColumnAVX2: the sign bits in R10's low byte
// (shifted out after), the zone mask ORed into R12 at bit sh.
#define ADDCHUNK8(off, sh) \
	VMOVD        R10, X7; \
	VPBROADCASTD X7, Y7; \
	VPAND        Y6, Y7, Y7; \
	VPCMPEQD     Y6, Y7, Y7; \
	VPAND        Y1, Y7, Y7; \
	VPADDD       Y2, Y7, Y7; \
	VMOVDQU      off(DI), Y0; \
	VPADDD       Y7, Y0, Y8; \
	VMOVDQU      Y8, off(DI); \
	VPSUBD       Y3, Y0, Y9; \
	VPXOR        Y5, Y9, Y9; \
	VPCMPGTD     Y9, Y4, Y9; \
	VMOVMSKPS    Y9, R11; \
	SHLQ         $sh, R11; \
	ORQ          R11, R12; \
	SHRQ         $8, R10

// func addColumnAVX2(m *int32, col, y *uint64, words int, delta, zlo int32, zw uint32, hits *uint64)
//
// addColumn512 in AVX2, eight margins at a time: ±delta from the sign
// bits expanded to lanes (2·delta where set, plus −delta, wrapping), not
// read from a table.
TEXT ·addColumnAVX2(SB), NOSPLIT, $0-56
	MOVQ         m+0(FP), DI
	MOVQ         col+8(FP), SI
	MOVQ         y+16(FP), DX
	MOVQ         words+24(FP), CX
	MOVL         delta+32(FP), AX
	MOVL         zlo+36(FP), BX
	MOVL         zw+40(FP), R8
	MOVQ         hits+48(FP), R9
	LEAL         (AX)(AX*1), R13
	VMOVD        R13, X1
	VPBROADCASTD X1, Y1        // 2·delta
	NEGL         AX
	VMOVD        AX, X2
	VPBROADCASTD X2, Y2        // −delta
	VMOVD        BX, X3
	VPBROADCASTD X3, Y3        // zlo
	XORL         $0x80000000, R8
	VMOVD        R8, X4
	VPBROADCASTD X4, Y4        // zw with its sign bit flipped
	MOVL         $0x80000000, AX
	VMOVD        AX, X5
	VPBROADCASTD X5, Y5        // the sign bit
	VMOVDQU      laneBits<>(SB), Y6

word8:
	TESTQ CX, CX
	JZ    done8
	MOVQ  (SI), R10
	XORQ  (DX), R10
	NOTQ  R10
	XORQ  R12, R12
	ADDCHUNK8(0, 0)
	ADDCHUNK8(32, 8)
	ADDCHUNK8(64, 16)
	ADDCHUNK8(96, 24)
	ADDCHUNK8(128, 32)
	ADDCHUNK8(160, 40)
	ADDCHUNK8(192, 48)
	ADDCHUNK8(224, 56)
	MOVQ  R12, (R9)
	ADDQ  $256, DI
	ADDQ  $8, SI
	ADDQ  $8, DX
	ADDQ  $8, R9
	DECQ  CX
	JMP   word8

done8:
	VZEROUPPER
	RET
