#include "textflag.h"

// INNER runs FWHT stages h = 1, 2, 4 on the 8 lanes of V (T1–T3 are
// scratch): with S the lanes' partners swapped in, the lower lane of each
// pair takes V + S (x[j] + x[j+h]) and the upper S − V (x[j] − x[j+h]).
#define INNER(V, T1, T2, T3) \
	VPERMILPS $0xB1, V, T1; \
	VADDPS T1, V, T2; \
	VSUBPS V, T1, T3; \
	VBLENDPS $0xAA, T3, T2, V; \
	VPERMILPS $0x4E, V, T1; \
	VADDPS T1, V, T2; \
	VSUBPS V, T1, T3; \
	VBLENDPS $0xCC, T3, T2, V; \
	VPERM2F128 $0x01, V, V, T1; \
	VADDPS T1, V, T2; \
	VSUBPS V, T1, T3; \
	VBLENDPS $0xF0, T3, T2, V

// RADIX4V(V0, …, V7, STEP) is one step of two fused FWHT stages (h, 2h)
// on the vectors (V0–V3 loaded, V4–V7 scratch) at SI, R9, R10, R11 (q0…q3,
// h apart), each advanced by STEP bytes, one vector:
// q0, q1, q2, q3 = (a+c, b+d, a−c, b−d) with a, b = q0 ± q1, c, d = q2 ± q3,
// the reference loop's pairs in its order. RADIX4 and ZRADIX4 are its
// 8- and 16-lane forms.
#define RADIX4V(V0, V1, V2, V3, V4, V5, V6, V7, STEP) \
	VMOVUPS (SI), V0; \
	VMOVUPS (R9), V1; \
	VMOVUPS (R10), V2; \
	VMOVUPS (R11), V3; \
	VADDPS V1, V0, V4; \
	VSUBPS V1, V0, V5; \
	VADDPS V3, V2, V6; \
	VSUBPS V3, V2, V7; \
	VADDPS V6, V4, V0; \
	VADDPS V7, V5, V1; \
	VSUBPS V6, V4, V2; \
	VSUBPS V7, V5, V3; \
	VMOVUPS V0, (SI); \
	VMOVUPS V1, (R9); \
	VMOVUPS V2, (R10); \
	VMOVUPS V3, (R11); \
	ADDQ $STEP, SI; \
	ADDQ $STEP, R9; \
	ADDQ $STEP, R10; \
	ADDQ $STEP, R11

#define RADIX4 RADIX4V(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, 32)

#define ZRADIX4 RADIX4V(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, 64)

// RADIX2V(V0, …, V3, STEP) is one step of a single stage on the vectors
// at SI and R9; RADIX2 and ZRADIX2 are its 8- and 16-lane forms.
#define RADIX2V(V0, V1, V2, V3, STEP) \
	VMOVUPS (SI), V0; \
	VMOVUPS (R9), V1; \
	VADDPS V1, V0, V2; \
	VSUBPS V1, V0, V3; \
	VMOVUPS V2, (SI); \
	VMOVUPS V3, (R9); \
	ADDQ $STEP, SI; \
	ADDQ $STEP, R9

#define RADIX2 RADIX2V(Y0, Y1, Y2, Y3, 32)

#define ZRADIX2 RADIX2V(Z0, Z1, Z2, Z3, 64)

// FWHTSTAGES(LANES, R4, R2) runs FWHT's stages h >= LANES on x (DI, CX
// values), whose stages below LANES are done: fused in pairs (h, 2h) by
// R4 over vectors of LANES values, then one radix-2 stage by R2 when one
// is left, and returns. Its labels are local to the function that
// expands it.
#define FWHTSTAGES(LANES, R4, R2) \
	MOVQ $LANES, BX; \
f_radix4: \
	LEAQ (BX*4), AX; \
	CMPQ AX, CX; \
	JA   f_radix2; \
	XORQ R8, R8; \
f_r4block: \
	LEAQ (DI)(R8*4), SI; \
	LEAQ (SI)(BX*4), R9; \
	LEAQ (R9)(BX*4), R10; \
	LEAQ (R10)(BX*4), R11; \
	MOVQ BX, R12; \
f_r4loop: \
	R4; \
	SUBQ $LANES, R12; \
	JNZ  f_r4loop; \
	ADDQ AX, R8; \
	CMPQ R8, CX; \
	JB   f_r4block; \
	SHLQ $2, BX; \
	JMP  f_radix4; \
f_radix2: \
	CMPQ BX, CX; \
	JAE  f_done; \
	MOVQ DI, SI; \
	LEAQ (DI)(BX*4), R9; \
	MOVQ BX, R12; \
f_r2loop: \
	R2; \
	SUBQ $LANES, R12; \
	JNZ  f_r2loop; \
f_done: \
	VZEROUPPER; \
	RET

// BITSARGS loads the arguments of bitsAVX2 and bitsAVX512 (the same) and
// broadcasts EXACT8's constants; AX is left at k.
#define BITSARGS \
	MOVQ out_base+0(FP), DI; \
	MOVQ out_len+8(FP), DX; \
	MOVQ u_base+24(FP), SI; \
	MOVQ scale_base+48(FP), R8; \
	MOVQ turn_base+72(FP), R9; \
	MOVQ half_base+96(FP), R10; \
	MOVQ s32_base+120(FP), R11; \
	MOVQ t32_base+144(FP), R12; \
	MOVQ e32_base+168(FP), R13; \
	MOVQ k+192(FP), AX; \
	VBROADCASTSD 0(AX), Y15; \
	VBROADCASTSD 8(AX), Y14; \
	VBROADCASTSD 16(AX), Y13

// HSUMQ(Y, X) sums the four quadwords of Y (X its low half) into AX;
// X0 and X1 are scratch.
#define HSUMQ(Y, X) \
	VEXTRACTI128 $1, Y, X0; \
	VPADDQ X0, X, X0; \
	VPSHUFD $0x4E, X0, X1; \
	VPADDQ X1, X0, X0; \
	VMOVQ X0, AX

// HSUMD sums the eight doublewords of Y0 into AX (mod 2³²); X1 is
// scratch.
#define HSUMD \
	VEXTRACTI128 $1, Y0, X1; \
	VPADDD X1, X0, X0; \
	VPSHUFD $0x4E, X0, X1; \
	VPADDD X1, X0, X0; \
	VPSHUFD $0xB1, X0, X1; \
	VPADDD X1, X0, X0; \
	VMOVD X0, AX

// ZGATHER16(OFF, Z) loads lane l of Z with a[perm[OFF/4 + l]]·gauss[…]
// by one VGATHERDPS (perm at R9, gauss at R10, a at SI; Z9, K1 scratch).
#define ZGATHER16(OFF, Z) \
	VMOVDQU32 OFF(R9), Z9; \
	KXNORW K1, K1, K1; \
	VGATHERDPS (SI)(Z9*4), K1, Z; \
	VMULPS OFF(R10), Z, Z

// ZPERM128(OFF, Z) sets lane l of Z to v[perm[OFF/4 + l] mod 128] for
// 128 values v held in Z18–Z25, by the AVX-512 permutes: PERM64 per half,
// bit 6 of the index (K2) picking. The index stays in Z8. Z30 and Z31
// hold 32 and 64; Z9–Z11, K1 and K2 are scratch.
#define ZPERM128(OFF, Z) \
	VMOVDQU32 OFF(R9), Z8; \
	VPTESTMD  Z30, Z8, K1; \
	VPTESTMD  Z31, Z8, K2; \
	PERM64(Z8, Z18, Z19, Z20, Z21, Z9, Z10); \
	PERM64(Z8, Z22, Z23, Z24, Z25, Z10, Z11); \
	VBLENDMPS Z10, Z9, K2, Z

// ZPERM16(OFF, Z) is ZGATHER16 from a unit of 128 values of a in Z18–Z25.
#define ZPERM16(OFF, Z) \
	ZPERM128(OFF, Z); \
	VMULPS OFF(R10), Z, Z

// ZPERMHI(OFF, Z) finishes ZGATHER16 from a unit of 256 values of a: Z
// holds the lookups in a[0:128] (ZPERM128) and Z18–Z25 now a[128:256];
// lanes whose index has bit 7 set (against Z29 = 128) take theirs from
// there. Z12 and K3 are scratch too.
#define ZPERMHI(OFF, Z) \
	ZPERM128(OFF, Z12); \
	VPTESTMD  Z29, Z8, K3; \
	VBLENDMPS Z12, Z, K3, Z; \
	VMULPS OFF(R10), Z, Z

// ZLOADA(OFF) loads 128 values of a from OFF(SI) into Z18–Z25.
#define ZLOADA(OFF) \
	VMOVUPS OFF+0(SI), Z18; \
	VMOVUPS OFF+64(SI), Z19; \
	VMOVUPS OFF+128(SI), Z20; \
	VMOVUPS OFF+192(SI), Z21; \
	VMOVUPS OFF+256(SI), Z22; \
	VMOVUPS OFF+320(SI), Z23; \
	VMOVUPS OFF+384(SI), Z24; \
	VMOVUPS OFF+448(SI), Z25

// UPPER runs the stages h >= 64 of the block at BX (CX values), fused in
// pairs as in fwhtAVX2, then one radix-2 stage when one is left, and
// returns to SECOND (8(SP) = 1) or NEXT (2); R8–R10 are saved around it
// at 16–32(SP). Its labels are local to the function that expands it.
#define UPPER(SECOND, NEXT) \
	MOVQ R8, 16(SP); \
	MOVQ R9, 24(SP); \
	MOVQ R10, 32(SP); \
	MOVQ $64, DX; \
u_radix4: \
	LEAQ (DX*4), AX; \
	CMPQ AX, CX; \
	JA   u_radix2; \
	XORQ R8, R8; \
u_r4block: \
	LEAQ (BX)(R8*4), SI; \
	LEAQ (SI)(DX*4), R9; \
	LEAQ (R9)(DX*4), R10; \
	LEAQ (R10)(DX*4), R11; \
	MOVQ DX, R12; \
u_r4loop: \
	RADIX4; \
	SUBQ $8, R12; \
	JNZ  u_r4loop; \
	ADDQ AX, R8; \
	CMPQ R8, CX; \
	JB   u_r4block; \
	SHLQ $2, DX; \
	JMP  u_radix4; \
u_radix2: \
	CMPQ DX, CX; \
	JAE  u_done; \
	MOVQ BX, SI; \
	LEAQ (BX)(DX*4), R9; \
	MOVQ DX, R12; \
u_r2loop: \
	RADIX2; \
	SUBQ $8, R12; \
	JNZ  u_r2loop; \
u_done: \
	MOVQ 16(SP), R8; \
	MOVQ 24(SP), R9; \
	MOVQ 32(SP), R10; \
	CMPQ 8(SP), $1; \
	JEQ  SECOND; \
	JMP  NEXT

// func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL eaxArg+0(FP), AX
	MOVL ecxArg+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func xgetbv0() (eax uint32)
TEXT ·xgetbv0(SB), NOSPLIT, $0-4
	MOVL $0, CX
	XGETBV
	MOVL AX, eax+0(FP)
	RET

// func fwhtAVX2(x []float32)
//
// len(x) is a power of two >= 8. Stages h = 1, 2, 4 run inside each 8-lane
// vector: with s the vector with the partners of each lane swapped in, the
// lower lane of a pair takes x + s (= x[j] + x[j+h]) and the upper lane
// s − x (= x[j] − x[j+h]). Stages h >= 8 run across vectors, fused in pairs
// (h, 2h) as in fwhtUpper, then one radix-2 stage when one is left. Every
// output is the reference loop's sum or difference of the same two values.
TEXT ·fwhtAVX2(SB), NOSPLIT, $0-24
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), CX
	MOVQ DI, SI
	MOVQ CX, DX
	SHRQ $3, DX

inner:
	VMOVUPS (SI), Y0
	VPERMILPS $0xB1, Y0, Y1
	VADDPS Y1, Y0, Y2
	VSUBPS Y0, Y1, Y3
	VBLENDPS $0xAA, Y3, Y2, Y0
	VPERMILPS $0x4E, Y0, Y1
	VADDPS Y1, Y0, Y2
	VSUBPS Y0, Y1, Y3
	VBLENDPS $0xCC, Y3, Y2, Y0
	VPERM2F128 $0x01, Y0, Y0, Y1
	VADDPS Y1, Y0, Y2
	VSUBPS Y0, Y1, Y3
	VBLENDPS $0xF0, Y3, Y2, Y0
	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	DECQ DX
	JNZ inner

	FWHTSTAGES(8, RADIX4, RADIX2)

// ZSTAGE(K) finishes one of the stages h = 1, 2, 4, 8 within the 16 lanes
// of Z0, as INNER, once each lane's partner is in Z1: the lanes in K (the
// upper of each pair) take Z1 − Z0, the others Z0 + Z1.
#define ZSTAGE(K) \
	VADDPS Z1, Z0, Z2; \
	VSUBPS Z0, Z1, Z3; \
	VBLENDMPS Z3, Z2, K, Z0

// func fwhtAVX512(x []float32)
//
// fwhtAVX2 with 16 lanes, for len(x) >= 16: stages h = 1 to 8 within each
// vector, then h >= 16 fused in pairs in memory (ZRADIX4), and one
// radix-2 stage when one is left. The same operations on the same
// operands as the reference loop, so the same bits.
TEXT ·fwhtAVX512(SB), NOSPLIT, $0-24
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), CX
	MOVQ DI, SI
	MOVQ CX, DX
	SHRQ $4, DX
	MOVL $0xAAAA, AX
	KMOVW AX, K1
	MOVL $0xCCCC, AX
	KMOVW AX, K2
	MOVL $0xF0F0, AX
	KMOVW AX, K3
	MOVL $0xFF00, AX
	KMOVW AX, K4

z_inner:
	VMOVUPS (SI), Z0
	VPERMILPS  $0xB1, Z0, Z1
	ZSTAGE(K1)
	VPERMILPS  $0x4E, Z0, Z1
	ZSTAGE(K2)
	VSHUFF32X4 $0xB1, Z0, Z0, Z1
	ZSTAGE(K3)
	VSHUFF32X4 $0x4E, Z0, Z0, Z1
	ZSTAGE(K4)
	VMOVUPS Z0, (SI)
	ADDQ $64, SI
	DECQ DX
	JNZ  z_inner

	FWHTSTAGES(16, ZRADIX4, ZRADIX2)

// EXACT8(OFF, T, H) is the interval test in float64 of the 8 columns
// whose v is in Y0, with their turn at OFF(T) and half at OFF(H),
// computed as the Go loop does (the products separate instructions, the
// rounding (q + magic) − magic; Y15 = invTwoPi, Y14 = magic, Y13 = the
// abs mask): the 8 bits in AX. Clobbers BX and Y0–Y4.
#define EXACT8(OFF, T, H) \
	VCVTPS2PD X0, Y1; \
	VEXTRACTF128 $1, Y0, X0; \
	VCVTPS2PD X0, Y2; \
	VMULPD  Y15, Y1, Y1; \
	VMULPD  Y15, Y2, Y2; \
	VADDPD  OFF(T), Y1, Y1; \
	VADDPD  OFF+32(T), Y2, Y2; \
	VADDPD  Y14, Y1, Y3; \
	VADDPD  Y14, Y2, Y4; \
	VSUBPD  Y14, Y3, Y3; \
	VSUBPD  Y14, Y4, Y4; \
	VSUBPD  Y3, Y1, Y1; \
	VSUBPD  Y4, Y2, Y2; \
	VANDPD  Y13, Y1, Y1; \
	VANDPD  Y13, Y2, Y2; \
	VCMPPD  $2, OFF(H), Y1, Y1; \
	VCMPPD  $2, OFF+32(H), Y2, Y2; \
	VMOVMSKPD Y1, AX; \
	VMOVMSKPD Y2, BX; \
	SHLQ $4, BX; \
	ORQ  BX, AX

// YEXACT(OFF) ORs the float64 bits (EXACT8) of the 8 columns from
// CX + OFF/4 into R14 at bit OFF/4, turn and half at R9 and R10 already
// moved to column CX.
#define YEXACT(OFF) \
	VMOVUPS OFF(SI)(CX*4), Y0; \
	VMULPS  OFF(R8)(CX*4), Y0, Y0; \
	EXACT8(OFF*2, R9, R10); \
	SHLQ $(OFF/4), AX; \
	ORQ  AX, R14

// YPASS(OFF, E) is bitsAVX2's float32 pass over the 8 columns from
// CX + OFF/4: e = 2¹⁹|f'| + e32 in E, and Y12 ANDed with the lanes it
// decides, |e| > max(|p|, 1) (false for NaN). Y0, Y1 and Y3 are scratch.
#define YPASS(OFF, E) \
	VMOVUPS OFF(SI)(CX*4), Y0; \
	VMULPS  OFF(R11)(CX*4), Y0, Y1; \
	VADDPS  OFF(R12)(CX*4), Y1, E; \
	VROUNDPS $8, E, Y3; \
	VSUBPS  Y3, E, E; \
	VANDPS  Y11, E, E; \
	VMULPS  Y9, E, E; \
	VADDPS  OFF(R13)(CX*4), E, E; \
	VANDPS  Y11, Y1, Y1; \
	VMAXPS  Y10, Y1, Y1; \
	VANDPS  Y11, E, Y3; \
	VCMPPS  $0x1E, Y1, Y3, Y3; \
	VANDPS  Y3, Y12, Y12

// YSIGNS(E0, E1, E2, E3) puts the signs of the 32 lanes of E0…E3 in AX,
// lane l of E_k at bit 8k + l: packed to bytes with saturation (which
// keeps signs), the doublewords put back in order by VPERMD (Y8), then
// VPMOVMSKB.
#define YSIGNS(E0, E1, E2, E3) \
	VPACKSSDW E1, E0, E0; \
	VPACKSSDW E3, E2, E2; \
	VPACKSSWB E2, E0, E0; \
	VPERMD    E0, Y8, E0; \
	VPMOVMSKB E0, AX

// func bitsAVX2(out []uint64, u, scale []float32, turn, half []float64, s32, t32, e32 []float32, k *simdConsts)
//
// For each word w of out, bit i is column c = 64w+i: with
// v = float32(u[c]·scale[c]), q = float64(float64(v)·invTwoPi) + turn[c],
// f = q − ((q + magic) − magic), the bit is |f| <= half[c]: embedRun's
// arithmetic. Each word's 64 columns are first decided in float32, 8
// lanes at a time (the proof at bitsGo): p = u·s32 (s32 the scale over
// 2π), f' = (p + t32) − round(p + t32), e = 2¹⁹|f'| + e32
// (= 2¹⁹(|f'| − h32)), and the bit is e < 0 wherever |e| > max(|p|, 1).
// A word with any other lane (about one column in 2¹⁷ at ordinary
// phases; every lane of a NaN, infinite or huge phase) is redone in
// float64, 8 columns at a time, with the Go loop's operations in its
// order: the products are separate instructions, never fused, and the
// rounding is (q + magic) − magic as there (VROUNDPD differs from it
// once |q| >= 2⁵¹, a phase of an absurd input but a float32 one).
TEXT ·bitsAVX2(SB), NOSPLIT, $0-200
	BITSARGS
	VBROADCASTSS 24(AX), Y11 // float32 abs mask
	VBROADCASTSS 28(AX), Y10 // 1
	VBROADCASTSS 32(AX), Y9  // 2¹⁹
	VMOVDQU 36(AX), Y8       // YSIGNS' order
	SHLQ  $6, DX             // columns
	XORQ  CX, CX             // column
	TESTQ DX, DX
	JZ    bitsdone

bitsword:
	VPCMPEQD Y12, Y12, Y12   // every lane decided, so far
	YPASS(0, Y4)
	YPASS(32, Y5)
	YPASS(64, Y6)
	YPASS(96, Y7)
	YSIGNS(Y4, Y5, Y6, Y7)
	MOVL AX, R14
	YPASS(128, Y4)
	YPASS(160, Y5)
	YPASS(192, Y6)
	YPASS(224, Y7)
	YSIGNS(Y4, Y5, Y6, Y7)
	SHLQ $32, AX
	ORQ  AX, R14
	VMOVMSKPS Y12, BX
	CMPL BX, $0xFF
	JNE  bitsexact

bitsnext:
	MOVQ R14, (DI)
	ADDQ $8, DI
	ADDQ $64, CX
	CMPQ CX, DX
	JB   bitsword

bitsdone:
	VZEROUPPER
	RET

bitsexact: // the 64 columns in float64, turn and half at R9 and R10 moved to them
	LEAQ (R9)(CX*8), R9
	LEAQ (R10)(CX*8), R10
	XORQ R14, R14
	YEXACT(0)
	YEXACT(32)
	YEXACT(64)
	YEXACT(96)
	YEXACT(128)
	YEXACT(160)
	YEXACT(192)
	YEXACT(224)
	MOVQ CX, AX
	SHLQ $3, AX
	SUBQ AX, R9
	SUBQ AX, R10
	JMP  bitsnext

// func blocksAVX2(u, a, x, sign []float32, perm []int32, gauss []float32, nb int)
//
// transformBlock for nb consecutive blocks of d = len(x) >= 8 (a power of
// two): for block k, with its parameters at sign[k·d:], perm[k·d:] and
// gauss[k·d:], a = x·sign (lane by lane), FWHT(a), w = gauss·a[perm]
// (scalar loads: VGATHERDPS measured 2.5× slower here), FWHT(w) into
// u[k·d:]. a (len d) is scratch. The FWHT is the
// code of fwhtAVX2, entered with its buffer in DI and left through R13.
TEXT ·blocksAVX2(SB), NOSPLIT, $16-152
	MOVQ x_len+56(FP), CX
	MOVQ nb+144(FP), AX
	TESTQ AX, AX
	JZ    b_end
	MOVQ AX, 8(SP)
	MOVQ $0, 0(SP)
	CMPQ CX, $8
	JEQ  small8
	CMPQ CX, $16
	JEQ  small16

b_block:
	MOVQ 0(SP), R13
	MOVQ a_base+24(FP), DI
	MOVQ x_base+48(FP), SI
	MOVQ sign_base+72(FP), R8
	ADDQ R13, R8
	MOVQ CX, DX

b_mul:
	VMOVUPS (SI), Y0
	VMULPS  (R8), Y0, Y0
	INNER(Y0, Y1, Y2, Y3)
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, DI
	SUBQ $8, DX
	JNZ  b_mul
	MOVQ a_base+24(FP), DI
	MOVQ $1, R13
	JMP  f_upper

b_ret1:
	MOVQ 0(SP), R13
	MOVQ u_base+0(FP), DI
	ADDQ R13, DI
	MOVQ perm_base+96(FP), R8
	ADDQ R13, R8
	MOVQ gauss_base+120(FP), R9
	ADDQ R13, R9
	MOVQ a_base+24(FP), SI
	MOVQ CX, DX

b_gather:
	MOVL 0(R8), AX
	MOVL 4(R8), BX
	MOVL 8(R8), R10
	MOVL 12(R8), R11
	VMOVSS (SI)(AX*4), X0
	VINSERTPS $0x10, (SI)(BX*4), X0, X0
	VINSERTPS $0x20, (SI)(R10*4), X0, X0
	VINSERTPS $0x30, (SI)(R11*4), X0, X0
	MOVL 16(R8), AX
	MOVL 20(R8), BX
	MOVL 24(R8), R10
	MOVL 28(R8), R11
	VMOVSS (SI)(AX*4), X1
	VINSERTPS $0x10, (SI)(BX*4), X1, X1
	VINSERTPS $0x20, (SI)(R10*4), X1, X1
	VINSERTPS $0x30, (SI)(R11*4), X1, X1
	VINSERTF128 $1, X1, Y0, Y0
	VMULPS    (R9), Y0, Y0
	INNER(Y0, Y1, Y2, Y3)
	VMOVUPS   Y0, (DI)
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, DI
	SUBQ $8, DX
	JNZ  b_gather
	MOVQ 0(SP), R13
	MOVQ u_base+0(FP), DI
	ADDQ R13, DI
	MOVQ $2, R13
	JMP  f_upper

b_ret2:
	MOVQ 0(SP), R13
	LEAQ (R13)(CX*4), R13
	MOVQ R13, 0(SP)
	DECQ 8(SP)
	JNZ  b_block

b_end:
	VZEROUPPER
	RET

// d = 8 and d = 16: every block in registers, the permutation by VPERMPS
// (for 16, from both halves, chosen by bit 3 of the index).
small8:
	MOVQ x_base+48(FP), SI
	VMOVUPS (SI), Y8
	MOVQ sign_base+72(FP), R8
	MOVQ perm_base+96(FP), R9
	MOVQ gauss_base+120(FP), R10
	MOVQ u_base+0(FP), DI
	MOVQ AX, DX

s8loop:
	VMULPS (R8), Y8, Y0
	INNER(Y0, Y1, Y2, Y3)
	VMOVDQU (R9), Y1
	VPERMPS Y0, Y1, Y0
	VMULPS (R10), Y0, Y0
	INNER(Y0, Y1, Y2, Y3)
	VMOVUPS Y0, (DI)
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, DI
	DECQ DX
	JNZ  s8loop
	VZEROUPPER
	RET

small16:
	MOVQ x_base+48(FP), SI
	VMOVUPS (SI), Y8
	VMOVUPS 32(SI), Y9
	MOVQ sign_base+72(FP), R8
	MOVQ perm_base+96(FP), R9
	MOVQ gauss_base+120(FP), R10
	MOVQ u_base+0(FP), DI
	MOVQ AX, DX

s16loop:
	VMULPS (R8), Y8, Y0
	VMULPS 32(R8), Y9, Y4
	INNER(Y0, Y1, Y2, Y3)
	INNER(Y4, Y5, Y6, Y7)
	VADDPS Y4, Y0, Y10
	VSUBPS Y4, Y0, Y11
	VMOVDQU (R9), Y1
	VPERMPS Y10, Y1, Y2
	VPERMPS Y11, Y1, Y3
	VPSLLD $28, Y1, Y1
	VBLENDVPS Y1, Y3, Y2, Y0
	VMOVDQU 32(R9), Y5
	VPERMPS Y10, Y5, Y6
	VPERMPS Y11, Y5, Y7
	VPSLLD $28, Y5, Y5
	VBLENDVPS Y5, Y7, Y6, Y4
	VMULPS (R10), Y0, Y0
	VMULPS 32(R10), Y4, Y4
	INNER(Y0, Y1, Y2, Y3)
	INNER(Y4, Y5, Y6, Y7)
	VADDPS Y4, Y0, Y10
	VSUBPS Y4, Y0, Y11
	VMOVUPS Y10, (DI)
	VMOVUPS Y11, 32(DI)
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, R10
	ADDQ $64, DI
	DECQ DX
	JNZ  s16loop
	VZEROUPPER
	RET

f_upper:
	MOVQ $8, BX // h

f_radix4:
	LEAQ (BX*4), AX
	CMPQ AX, CX
	JA   f_radix2
	XORQ R8, R8 // i

f_r4block:
	LEAQ (DI)(R8*4), SI   // q0
	LEAQ (SI)(BX*4), R9   // q1
	LEAQ (R9)(BX*4), R10  // q2
	LEAQ (R10)(BX*4), R11 // q3
	MOVQ BX, R12

f_r4loop:
	RADIX4
	SUBQ $8, R12
	JNZ  f_r4loop
	ADDQ AX, R8
	CMPQ R8, CX
	JB   f_r4block
	SHLQ $2, BX
	JMP  f_radix4

f_radix2:
	CMPQ BX, CX
	JAE  f_done
	MOVQ DI, SI
	LEAQ (DI)(BX*4), R9
	MOVQ BX, R12

f_r2loop:
	RADIX2
	SUBQ $8, R12
	JNZ  f_r2loop

f_done:
	CMPQ R13, $1
	JEQ  b_ret1
	JMP  b_ret2

// func projAVX2(acc *[8]float32, x []float32, idx []int32, coef []int8)
//
// Eight outputs of the projection at once: for each entry e (ascending
// input i = idx[e]) and lane k with coefficient t = coef[8e+k] ≠ 0,
// acc[k] += t·x[i], as x[i] with its sign flipped for t = −1; a lane with
// t = 0 keeps its sum as it is (a blend, not an addition of zero), so each
// lane adds exactly the reference loop's terms in its order.
TEXT ·projAVX2(SB), NOSPLIT, $0-80
	MOVQ acc+0(FP), DI
	MOVQ x_base+8(FP), SI
	MOVQ idx_base+32(FP), R8
	MOVQ idx_len+40(FP), DX
	MOVQ coef_base+56(FP), R9
	VXORPS Y0, Y0, Y0   // sums
	VPXOR  Y7, Y7, Y7   // zero
	VPCMPEQD Y6, Y6, Y6
	VPSLLD $31, Y6, Y6  // sign bits
	TESTQ DX, DX
	JZ    p_done

p_loop:
	MOVL (R8), AX
	VBROADCASTSS (SI)(AX*4), Y1
	VPMOVSXBD (R9), Y2
	VPAND Y6, Y2, Y3     // sign bit where t = −1
	VPCMPEQD Y7, Y2, Y4  // lanes with t = 0
	VXORPS Y3, Y1, Y1
	VADDPS Y1, Y0, Y5
	VBLENDVPS Y4, Y0, Y5, Y0
	ADDQ $4, R8
	ADDQ $8, R9
	DECQ DX
	JNZ  p_loop

p_done:
	VMOVUPS Y0, (DI)
	VZEROUPPER
	RET

// func differAVX2(z, sign, nz []uint64, lut *[32]byte) (differ int)
//
// ternaryDiffer's popcount(nz & (z ^ sign)) over len(z) words (a multiple
// of 4), four words at a time: each byte's bits counted with a nibble
// table (VPSHUFB), the bytes summed per word (VPSADBW). Integer counts:
// any order gives the same sum.
TEXT ·differAVX2(SB), NOSPLIT, $0-88
	MOVQ z_base+0(FP), SI
	MOVQ z_len+8(FP), DX
	MOVQ sign_base+24(FP), R8
	MOVQ nz_base+48(FP), R9
	MOVQ lut+72(FP), AX
	VMOVDQU (AX), Y15       // nibble popcounts, both lanes
	VPCMPEQB Y14, Y14, Y14
	VPSRLW $12, Y14, Y14
	VPACKUSWB Y14, Y14, Y14 // 0x0f in every byte
	VPXOR Y13, Y13, Y13     // zero
	VPXOR Y11, Y11, Y11     // sums
	SHRQ $2, DX
	JZ   d_done

d_loop:
	VMOVDQU (SI), Y0
	VPXOR   (R8), Y0, Y0
	VPAND   (R9), Y0, Y2 // nz & x
	VPAND   Y14, Y2, Y4
	VPSRLW  $4, Y2, Y5
	VPAND   Y14, Y5, Y5
	VPSHUFB Y4, Y15, Y4
	VPSHUFB Y5, Y15, Y5
	VPADDB  Y5, Y4, Y4
	VPSADBW Y13, Y4, Y4
	VPADDQ  Y4, Y11, Y11
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	DECQ DX
	JNZ  d_loop

d_done:
	HSUMQ(Y11, X11)
	MOVQ AX, differ+80(FP)
	VZEROUPPER
	RET

// S1, S2 and S4 are FWHT's stages h = 1, 2, 4 across eight vectors
// (vector j holding element j of each lane's group of eight), from
// V0–V7 into W0–W7: W_j, W_{j+h} = V_j + V_{j+h}, V_j − V_{j+h}, lane by
// lane the reference loop's x[j] + x[j+h], x[j] − x[j+h].
#define S1(V0, V1, V2, V3, V4, V5, V6, V7, W0, W1, W2, W3, W4, W5, W6, W7) \
	VADDPS V1, V0, W0; VSUBPS V1, V0, W1; \
	VADDPS V3, V2, W2; VSUBPS V3, V2, W3; \
	VADDPS V5, V4, W4; VSUBPS V5, V4, W5; \
	VADDPS V7, V6, W6; VSUBPS V7, V6, W7

#define S2(V0, V1, V2, V3, V4, V5, V6, V7, W0, W1, W2, W3, W4, W5, W6, W7) \
	VADDPS V2, V0, W0; VSUBPS V2, V0, W2; \
	VADDPS V3, V1, W1; VSUBPS V3, V1, W3; \
	VADDPS V6, V4, W4; VSUBPS V6, V4, W6; \
	VADDPS V7, V5, W5; VSUBPS V7, V5, W7

#define S4(V0, V1, V2, V3, V4, V5, V6, V7, W0, W1, W2, W3, W4, W5, W6, W7) \
	VADDPS V4, V0, W0; VSUBPS V4, V0, W4; \
	VADDPS V5, V1, W1; VSUBPS V5, V1, W5; \
	VADDPS V6, V2, W2; VSUBPS V6, V2, W6; \
	VADDPS V7, V3, W3; VSUBPS V7, V3, W7

// TRANSPOSE turns the 8×8 matrix in Y8–Y15 (rows) into its transpose in
// Y0–Y7, through both sets; it moves values without arithmetic.
#define TRANSPOSE \
	VUNPCKLPS Y9, Y8, Y0; \
	VUNPCKHPS Y9, Y8, Y1; \
	VUNPCKLPS Y11, Y10, Y2; \
	VUNPCKHPS Y11, Y10, Y3; \
	VUNPCKLPS Y13, Y12, Y4; \
	VUNPCKHPS Y13, Y12, Y5; \
	VUNPCKLPS Y15, Y14, Y6; \
	VUNPCKHPS Y15, Y14, Y7; \
	VSHUFPS $0x44, Y2, Y0, Y8; \
	VSHUFPS $0xEE, Y2, Y0, Y9; \
	VSHUFPS $0x44, Y3, Y1, Y10; \
	VSHUFPS $0xEE, Y3, Y1, Y11; \
	VSHUFPS $0x44, Y6, Y4, Y12; \
	VSHUFPS $0xEE, Y6, Y4, Y13; \
	VSHUFPS $0x44, Y7, Y5, Y14; \
	VSHUFPS $0xEE, Y7, Y5, Y15; \
	VPERM2F128 $0x20, Y12, Y8, Y0; \
	VPERM2F128 $0x20, Y13, Y9, Y1; \
	VPERM2F128 $0x20, Y14, Y10, Y2; \
	VPERM2F128 $0x20, Y15, Y11, Y3; \
	VPERM2F128 $0x31, Y12, Y8, Y4; \
	VPERM2F128 $0x31, Y13, Y9, Y5; \
	VPERM2F128 $0x31, Y14, Y10, Y6; \
	VPERM2F128 $0x31, Y15, Y11, Y7

// STORE8 stores eight vectors at (DST).
#define STORE8(DST, V0, V1, V2, V3, V4, V5, V6, V7) \
	VMOVUPS V0, 0(DST); \
	VMOVUPS V1, 32(DST); \
	VMOVUPS V2, 64(DST); \
	VMOVUPS V3, 96(DST); \
	VMOVUPS V4, 128(DST); \
	VMOVUPS V5, 160(DST); \
	VMOVUPS V6, 192(DST); \
	VMOVUPS V7, 224(DST)

// LOAD8(OFF, Y, X) loads lane l of Y with (SI)[idx[OFF/4 + l]], the
// indices at R9, by scalar loads; X8, AX and R11–R13 are scratch.
#define LOAD8(OFF, Y, X) \
	MOVL OFF+0(R9), AX; \
	MOVL OFF+4(R9), R11; \
	MOVL OFF+8(R9), R12; \
	MOVL OFF+12(R9), R13; \
	VMOVSS (SI)(AX*4), X; \
	VINSERTPS $0x10, (SI)(R11*4), X, X; \
	VINSERTPS $0x20, (SI)(R12*4), X, X; \
	VINSERTPS $0x30, (SI)(R13*4), X, X; \
	MOVL OFF+16(R9), AX; \
	MOVL OFF+20(R9), R11; \
	MOVL OFF+24(R9), R12; \
	MOVL OFF+28(R9), R13; \
	VMOVSS (SI)(AX*4), X8; \
	VINSERTPS $0x10, (SI)(R11*4), X8, X8; \
	VINSERTPS $0x20, (SI)(R12*4), X8, X8; \
	VINSERTPS $0x30, (SI)(R13*4), X8, X8; \
	VINSERTF128 $1, X8, Y, Y

// GATHER8(OFF, Y, X) loads lane l of Y with a[perm[OFF/4 + l]]·gauss[…]:
// perm at R9, gauss at R10, a at SI.
#define GATHER8(OFF, Y, X) \
	LOAD8(OFF, Y, X); \
	VMULPS OFF(R10), Y, Y

// VGATHERXS(OFF, Y) is LOAD8 with one VGATHERDPS (Y9, Y10 scratch).
#define VGATHERXS(OFF, Y) \
	VMOVDQU OFF(R9), Y9; \
	VPCMPEQD Y10, Y10, Y10; \
	VGATHERDPS Y10, (SI)(Y9*4), Y

// VGATHER8(OFF, Y) is GATHER8 with one VGATHERDPS.
#define VGATHER8(OFF, Y) \
	VGATHERXS(OFF, Y); \
	VMULPS OFF(R10), Y, Y

// PERM64(I, T0, T1, T2, T3, Q, S) sets lane l of Q to a[I_l] for the
// 64 values a[0:64] held in T0–T3: a VPERMI2PS in each half, and K1
// (lanes whose index has bit 5 set) picks. S is scratch.
#define PERM64(I, T0, T1, T2, T3, Q, S) \
	VMOVDQA32 I, Q; \
	VPERMI2PS T1, T0, Q; \
	VMOVDQA32 I, S; \
	VPERMI2PS T3, T2, S; \
	VBLENDMPS S, Q, K1, Q

// BIGCONSTS broadcasts the PERM16 macros' constants 32, 64 and 128 into
// Z13–Z15 (the tiles clobber them).
#define BIGCONSTS \
	MOVL $32, AX; \
	VPBROADCASTD AX, Z13; \
	MOVL $64, AX; \
	VPBROADCASTD AX, Z14; \
	MOVL $128, AX; \
	VPBROADCASTD AX, Z15

// PERM16D64, PERM16D128 and PERM16D256 (OFF, Z, YH) set lane l of Z (its
// halves are Y_c and YH = Y_{c+1}) to a[perm[OFF/4 + l]]·gauss[OFF/4 + l]
// for a unit of 64, 128 or 256 values of a held in Z16–Z19, Z16–Z23 or
// Z16–Z31: PERM64 per quarter of a, then bits 6 (K2) and 7 (K3) of the
// index pick. perm at R9, gauss at R10; Z13–Z15 hold BIGCONSTS; Z8–Z12
// and K1–K3 are scratch. They move values without arithmetic until the
// one multiplication GATHER8 does.
#define PERM16HEAD(OFF) \
	VMOVDQU32 OFF(R9), Z8; \
	VPTESTMD  Z13, Z8, K1; \
	VPTESTMD  Z14, Z8, K2; \
	VPTESTMD  Z15, Z8, K3

#define PERM16TAIL(OFF, Z, YH) \
	VMULPS    OFF(R10), Z, Z; \
	VEXTRACTF64X4 $1, Z, YH

#define PERM16D64(OFF, Z, YH) \
	PERM16HEAD(OFF); \
	PERM64(Z8, Z16, Z17, Z18, Z19, Z, Z9); \
	PERM16TAIL(OFF, Z, YH)

#define PERM16D128(OFF, Z, YH) \
	PERM16HEAD(OFF); \
	PERM64(Z8, Z16, Z17, Z18, Z19, Z9, Z10); \
	PERM64(Z8, Z20, Z21, Z22, Z23, Z10, Z11); \
	VBLENDMPS Z10, Z9, K2, Z; \
	PERM16TAIL(OFF, Z, YH)

#define PERM16D256(OFF, Z, YH) \
	PERM16HEAD(OFF); \
	PERM64(Z8, Z16, Z17, Z18, Z19, Z9, Z10); \
	PERM64(Z8, Z20, Z21, Z22, Z23, Z10, Z11); \
	VBLENDMPS Z10, Z9, K2, Z9; \
	PERM64(Z8, Z24, Z25, Z26, Z27, Z10, Z11); \
	PERM64(Z8, Z28, Z29, Z30, Z31, Z11, Z12); \
	VBLENDMPS Z11, Z10, K2, Z10; \
	VBLENDMPS Z10, Z9, K3, Z; \
	PERM16TAIL(OFF, Z, YH)

// func tilesAVX2(u, a, xt, sign []float32, perm []int32, gauss []float32, units, rows, vgather int)
//
// transformBlock for consecutive blocks of d inputs, in units of
// U = len(xt) = max(d, 64) values (one block, or 64/d blocks when d < 64),
// with the blocks' parameters in tile order (see tileOrder): within each
// tile of 64, element 8r + c is stored at 8c + r, so that a tile's eight
// vectors are its columns and FWHT's stages h = 1, 2, 4 are additions
// across vectors, as are the stages h = 8 … min(d, 64)/2 (rows = 0 to 3 of
// them) after a transpose: no shuffles within a vector. xt is the padded
// input, repeated to U, in tile order. Per unit: a = x·sign, stages below
// 64 per tile, rows stored in natural order, stages h >= 64 in memory;
// then w = gauss·a[perm] gathered straight into tile order (perm counts
// from the unit's start), the same stages, into u. With vgather = 1 the
// gather is VGATHERDPS (faster on Intel cores, slower on AMD's), else
// scalar loads; with vgather = 2 and units of up to 256 values (d <= 256)
// the permutation is done in registers (the PERM16 macros, AVX-512),
// else by scalar loads.
// Every output is the reference loop's sum or difference of the same two
// values (a+b = b+a exactly), so the same bits.
TEXT ·tilesAVX2(SB), NOSPLIT, $64-168
	MOVQ units+144(FP), AX
	TESTQ AX, AX
	JZ    t_end
	MOVQ AX, 0(SP)          // units left
	MOVQ rows+152(FP), AX
	MOVQ AX, 40(SP)
	MOVQ xt_len+56(FP), CX  // U
	MOVQ sign_base+72(FP), R8
	MOVQ perm_base+96(FP), R9
	MOVQ gauss_base+120(FP), R10
	MOVQ u_base+0(FP), DI

t_block:
	MOVQ xt_base+48(FP), SI
	MOVQ a_base+24(FP), BX
	MOVQ CX, DX
	SHRQ $6, DX

t_first:
	VMOVUPS 0(SI), Y0
	VMULPS  0(R8), Y0, Y0
	VMOVUPS 32(SI), Y1
	VMULPS  32(R8), Y1, Y1
	VMOVUPS 64(SI), Y2
	VMULPS  64(R8), Y2, Y2
	VMOVUPS 96(SI), Y3
	VMULPS  96(R8), Y3, Y3
	VMOVUPS 128(SI), Y4
	VMULPS  128(R8), Y4, Y4
	VMOVUPS 160(SI), Y5
	VMULPS  160(R8), Y5, Y5
	VMOVUPS 192(SI), Y6
	VMULPS  192(R8), Y6, Y6
	VMOVUPS 224(SI), Y7
	VMULPS  224(R8), Y7, Y7
	MOVQ $1, 48(SP)
	JMP  t_tile

t_first_ret:
	ADDQ $256, SI
	ADDQ $256, R8
	ADDQ $256, BX
	DECQ DX
	JNZ  t_first
	MOVQ a_base+24(FP), BX
	MOVQ $1, 8(SP)
	CMPQ CX, $64
	JA   t_upper

t_second:
	MOVQ a_base+24(FP), SI
	MOVQ DI, BX
	MOVQ CX, DX
	SHRQ $6, DX
	CMPQ vgather+160(FP), $1
	JEQ  t_vgather
	CMPQ vgather+160(FP), $2
	JNE  t_gather
	CMPQ CX, $64
	JEQ  t_vpermi
	CMPQ CX, $128
	JEQ  t_vpermi128
	CMPQ CX, $256
	JEQ  t_vpermi256

t_gather:
	GATHER8(0, Y0, X0)
	GATHER8(32, Y1, X1)
	GATHER8(64, Y2, X2)
	GATHER8(96, Y3, X3)
	GATHER8(128, Y4, X4)
	GATHER8(160, Y5, X5)
	GATHER8(192, Y6, X6)
	GATHER8(224, Y7, X7)
	MOVQ $2, 48(SP)
	JMP  t_tile

t_gather_ret:
	ADDQ $256, R9
	ADDQ $256, R10
	ADDQ $256, BX
	DECQ DX
	JNZ  t_gather

t_gathered:
	MOVQ DI, BX
	MOVQ $2, 8(SP)
	CMPQ CX, $64
	JA   t_upper

t_next:
	LEAQ (DI)(CX*4), DI
	DECQ 0(SP)
	JNZ  t_block

t_end:
	VZEROUPPER
	RET

t_vgather:
	VGATHER8(0, Y0)
	VGATHER8(32, Y1)
	VGATHER8(64, Y2)
	VGATHER8(96, Y3)
	VGATHER8(128, Y4)
	VGATHER8(160, Y5)
	VGATHER8(192, Y6)
	VGATHER8(224, Y7)
	MOVQ $3, 48(SP)
	JMP  t_tile

t_vgather_ret:
	ADDQ $256, R9
	ADDQ $256, R10
	ADDQ $256, BX
	DECQ DX
	JNZ  t_vgather
	JMP  t_gathered

t_vpermi: // one tile: the unit is 64 values
	VMOVUPS 0(SI), Z16
	VMOVUPS 64(SI), Z17
	VMOVUPS 128(SI), Z18
	VMOVUPS 192(SI), Z19
	BIGCONSTS
	PERM16D64(0, Z0, Y1)
	PERM16D64(64, Z2, Y3)
	PERM16D64(128, Z4, Y5)
	PERM16D64(192, Z6, Y7)
	MOVQ $4, 48(SP)
	JMP  t_tile

t_vpermi_ret:
	ADDQ $256, R9
	ADDQ $256, R10
	JMP  t_gathered

t_vpermi128: // the unit's 128 values of a in Z16–Z23, then its two tiles
	VMOVUPS 0(SI), Z16
	VMOVUPS 64(SI), Z17
	VMOVUPS 128(SI), Z18
	VMOVUPS 192(SI), Z19
	VMOVUPS 256(SI), Z20
	VMOVUPS 320(SI), Z21
	VMOVUPS 384(SI), Z22
	VMOVUPS 448(SI), Z23

t_vpermi128_tile:
	BIGCONSTS
	PERM16D128(0, Z0, Y1)
	PERM16D128(64, Z2, Y3)
	PERM16D128(128, Z4, Y5)
	PERM16D128(192, Z6, Y7)
	MOVQ $5, 48(SP)
	JMP  t_tile

t_vpermi256: // the unit's 256 values of a in Z16–Z31, then its four tiles
	VMOVUPS 0(SI), Z16
	VMOVUPS 64(SI), Z17
	VMOVUPS 128(SI), Z18
	VMOVUPS 192(SI), Z19
	VMOVUPS 256(SI), Z20
	VMOVUPS 320(SI), Z21
	VMOVUPS 384(SI), Z22
	VMOVUPS 448(SI), Z23
	VMOVUPS 512(SI), Z24
	VMOVUPS 576(SI), Z25
	VMOVUPS 640(SI), Z26
	VMOVUPS 704(SI), Z27
	VMOVUPS 768(SI), Z28
	VMOVUPS 832(SI), Z29
	VMOVUPS 896(SI), Z30
	VMOVUPS 960(SI), Z31

t_vpermi256_tile:
	BIGCONSTS
	PERM16D256(0, Z0, Y1)
	PERM16D256(64, Z2, Y3)
	PERM16D256(128, Z4, Y5)
	PERM16D256(192, Z6, Y7)
	MOVQ $5, 48(SP)
	JMP  t_tile

t_vpermi_big_ret: // the unit's next tile, if any (the tiles keep Z16–Z31)
	ADDQ $256, R9
	ADDQ $256, R10
	ADDQ $256, BX
	DECQ DX
	JZ   t_gathered
	CMPQ CX, $128
	JEQ  t_vpermi128_tile
	JMP  t_vpermi256_tile

// A tile given as its columns in Y0–Y7 (Y_c lane r = element 8r + c):
// stages h = 1, 2, 4 across the columns, the transpose, the row stages
// (40(SP) of them: h = 8, 16, 32), the rows stored at (BX); back to the
// caller named by 48(SP). For d = 8 the first transform's tiles are
// stored as columns, without the transpose.
t_tile:
	S1(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15)
	S2(Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	S4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15)
	MOVQ 40(SP), AX
	TESTQ AX, AX
	JNZ  t_transpose
	CMPQ 48(SP), $1
	JNE  t_transpose
	// d = 8, first transform: a stays in column order (block r's
	// element c at 8c + r), which its perm entries index.
	STORE8(BX, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15)
	JMP  t_tiled

t_transpose:
	TRANSPOSE
	CMPQ AX, $3
	JEQ  t_rows3
	CMPQ AX, $2
	JEQ  t_rows2
	CMPQ AX, $1
	JEQ  t_rows1
	STORE8(BX, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	JMP  t_tiled

t_rows1:
	S1(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15)
	STORE8(BX, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15)
	JMP  t_tiled

t_rows2:
	S1(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15)
	S2(Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	STORE8(BX, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	JMP  t_tiled

t_rows3:
	S1(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15)
	S2(Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	S4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15)
	STORE8(BX, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15)

t_tiled:
	MOVQ 48(SP), AX
	CMPQ AX, $1
	JEQ  t_first_ret
	CMPQ AX, $2
	JEQ  t_gather_ret
	CMPQ AX, $4
	JEQ  t_vpermi_ret
	CMPQ AX, $5
	JEQ  t_vpermi_big_ret
	JMP  t_vgather_ret

// Stages h >= 64 of the block at BX (d = CX values), fused in pairs as in
// fwhtAVX2, then one radix-2 stage when one is left; back to t_second
// (8(SP) = 1) or t_next (2). R8–R10 and DI are saved around it.
t_upper:
	UPPER(t_second, t_next)

// EXACTW(OFF) is bitsAVX512's float64 pass over the 16 columns from
// c + OFF/4 on, c the column at 0(SP) (their turn at CX, half at R14):
// the bits stored at OFF/32(DI). Clobbers AX, BX, Y0–Y4 and 8(SP).
#define EXACTW(OFF) \
	MOVQ 0(SP), BX; \
	VMOVUPS OFF(SI)(BX*4), Y0; \
	VMULPS  OFF(R8)(BX*4), Y0, Y0; \
	EXACT8(OFF*2, CX, R14); \
	MOVQ AX, 8(SP); \
	MOVQ 0(SP), BX; \
	VMOVUPS OFF+32(SI)(BX*4), Y0; \
	VMULPS  OFF+32(R8)(BX*4), Y0, Y0; \
	EXACT8(OFF*2+64, CX, R14); \
	SHLQ $8, AX; \
	ORQ  8(SP), AX; \
	MOVW AX, OFF/32(DI)

// ZPASS(OFF, U, P, E, M, A, K) is bitsAVX512's float32 pass over the 16
// columns from BX + OFF/4: p = u·s32 in P, e = 2¹⁹|f'| + e32 in E, and K
// the lanes it decides, |e| > max(|p|, 1) (false for NaN; M, A and U
// scratch).
#define ZPASS(OFF, U, P, E, M, A, K) \
	VMOVUPS OFF(SI)(BX*4), U; \
	VMULPS  OFF(R11)(BX*4), U, P; \
	VADDPS  OFF(R12)(BX*4), P, E; \
	VREDUCEPS $8, E, E; \
	VPANDD  Z11, E, E; \
	VFMADD213PS OFF(R13)(BX*4), Z9, E; \
	VRANGEPS $0x0B, Z10, P, M; \
	VPANDD  Z11, E, A; \
	VCMPPS  $0x1E, M, A, K

// func bitsAVX512(out []uint64, u, scale []float32, turn, half []float64, s32, t32, e32 []float32, k *simdConsts)
//
// bitsAVX2 with 16 lanes, four vectors (64 columns, a word of out) a
// step, and AVX-512 DQ's and BW's instructions: f' in one VREDUCEPS, e in
// one FMA (2¹⁹|f'| is exact, so the sum is rounded once, as
// 2¹⁹(|f'| − h32) is), max(|p|, 1) in one VRANGEPS, the bits (e < 0)
// joined in a 64-bit mask and stored from it. A step with an undecided
// lane is redone in float64, 8 columns at a time, by bitsAVX2's exact
// code (EXACTW, EXACT8).
TEXT ·bitsAVX512(SB), NOSPLIT, $16-200
	BITSARGS
	VPBROADCASTD 24(AX), Z11 // float32 abs mask
	VBROADCASTSS 28(AX), Z10 // 1
	VBROADCASTSS 32(AX), Z9  // 2¹⁹
	VPXORD Z8, Z8, Z8        // 0
	SHLQ  $6, DX             // columns
	XORQ  BX, BX             // column
	TESTQ DX, DX
	JZ    z_done

z_group: // 64 columns
	ZPASS(0, Z0, Z1, Z2, Z3, Z4, K1)
	ZPASS(64, Z16, Z17, Z18, Z19, Z20, K3)
	ZPASS(128, Z21, Z22, Z23, Z24, Z25, K5)
	ZPASS(192, Z26, Z27, Z28, Z29, Z30, K6)
	KANDW   K1, K3, K1
	KANDW   K5, K6, K5
	KANDW   K1, K5, K1
	KORTESTW K1, K1
	JCC     z_exact                 // not every lane decided
	VCMPPS  $0x11, Z8, Z2, K2       // e < 0
	VCMPPS  $0x11, Z8, Z18, K4
	VCMPPS  $0x11, Z8, Z23, K5
	VCMPPS  $0x11, Z8, Z28, K6
	KUNPCKWD K2, K4, K2
	KUNPCKWD K5, K6, K5
	KUNPCKDQ K2, K5, K2
	KMOVQ   K2, (DI)

z_next:
	ADDQ $8, DI
	ADDQ $64, BX
	CMPQ BX, DX
	JB   z_group

z_done:
	VZEROUPPER
	RET

z_exact: // the 64 columns in float64, 8 at a time
	MOVQ BX, 0(SP)
	LEAQ (R9)(BX*8), CX
	LEAQ (R10)(BX*8), R14
	EXACTW(0)
	EXACTW(64)
	EXACTW(128)
	EXACTW(192)
	MOVQ 0(SP), BX
	JMP  z_next

// func threshAVX2(out []uint64, xs []float32, feature []int32, value []float32, vgather int)
//
// Threshold bits, 64 a word, OR'd into len(out) words: bit i is
// xs[feature[i]] > value[i] (false for NaN, as in Go), eight thresholds
// at a time, xs[feature[i]] gathered with VGATHERDPS (vgather = 1) or
// scalar loads. Every feature index must be a valid index of xs.
TEXT ·threshAVX2(SB), NOSPLIT, $0-104
	MOVQ out_base+0(FP), DI
	MOVQ out_len+8(FP), DX
	MOVQ xs_base+24(FP), SI
	MOVQ feature_base+48(FP), R9
	MOVQ value_base+72(FP), R10
	MOVQ vgather+96(FP), R8
	TESTQ DX, DX
	JZ    th_done

th_word:
	XORQ BX, BX
	XORQ CX, CX

th_group:
	CMPQ R8, $1
	JNE  th_scalar
	VGATHERXS(0, Y0)
	JMP  th_cmp

th_scalar:
	LOAD8(0, Y0, X0)

th_cmp:
	VCMPPS $0x1E, (R10), Y0, Y0 // xs[f] > value (ordered: NaN is false)
	VMOVMSKPS Y0, AX
	SHLQ CX, AX
	ORQ  AX, BX
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $8, CX
	CMPQ CX, $64
	JB   th_group
	ORQ  BX, (DI)
	ADDQ $8, DI
	DECQ DX
	JNZ  th_word

th_done:
	VZEROUPPER
	RET

// func differAVX512BW(z, sign, nz []uint64, lut *[32]byte) (differ int)
//
// differAVX2 eight words at a time with AVX-512 BW's 64-byte VPSHUFB and
// VPSADBW (len(z) a multiple of 8), for CPUs without VPOPCNTQ.
TEXT ·differAVX512BW(SB), NOSPLIT, $0-88
	MOVQ z_base+0(FP), SI
	MOVQ z_len+8(FP), DX
	MOVQ sign_base+24(FP), R8
	MOVQ nz_base+48(FP), R9
	MOVQ lut+72(FP), AX
	VBROADCASTI32X4 (AX), Z15 // nibble popcounts, every lane
	MOVL $0x0f0f0f0f, BX
	VPBROADCASTD BX, Z14
	VPXORQ Z13, Z13, Z13      // zero
	VPXORQ Z11, Z11, Z11      // sums
	SHRQ $3, DX
	JZ   w_done

w_loop:
	VMOVDQU64 (SI), Z0
	VPXORQ    (R8), Z0, Z0
	VPANDQ    (R9), Z0, Z2 // nz & x
	VPANDQ    Z14, Z2, Z4
	VPSRLW    $4, Z2, Z5
	VPANDQ    Z14, Z5, Z5
	VPSHUFB   Z4, Z15, Z4
	VPSHUFB   Z5, Z15, Z5
	VPADDB    Z5, Z4, Z4
	VPSADBW   Z13, Z4, Z4
	VPADDQ    Z4, Z11, Z11
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ $64, R9
	DECQ DX
	JNZ  w_loop

w_done:
	VEXTRACTI64X4 $1, Z11, Y2
	VPADDQ Y2, Y11, Y2
	HSUMQ(Y2, X2)
	MOVQ AX, differ+80(FP)
	VZEROUPPER
	RET

// func differAVX512(z, sign, nz []uint64) (differ int)
//
// differAVX2 eight words at a time with VPOPCNTQ (len(z) a multiple of 8).
TEXT ·differAVX512(SB), NOSPLIT, $0-80
	MOVQ z_base+0(FP), SI
	MOVQ z_len+8(FP), DX
	MOVQ sign_base+24(FP), R8
	MOVQ nz_base+48(FP), R9
	VPXORQ Z11, Z11, Z11 // sums
	SHRQ $3, DX
	JZ   e_done

e_loop:
	VMOVDQU64 (SI), Z0
	VPXORQ    (R8), Z0, Z0
	VPANDQ    (R9), Z0, Z2 // nz & x
	VPOPCNTQ  Z2, Z2
	VPADDQ    Z2, Z11, Z11
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ $64, R9
	DECQ DX
	JNZ  e_loop

e_done:
	VEXTRACTI64X4 $1, Z11, Y2
	VPADDQ Y2, Y11, Y2
	HSUMQ(Y2, X2)
	MOVQ AX, differ+72(FP)
	VZEROUPPER
	RET

// func treeLeavesAVX2(leaf []int32, xs []float32, feat []int32, value []float32, depth, vgather int)
//
// The leaves of len(leaf) trees (a multiple of 8), eight at a time: tree
// 8g + k's test at level l is feat and value [(g·depth + l)·8 + k], and its
// leaf has bit l set when xs[feature] > value (false for NaN, as in Go).
// xs[feature] is gathered with VGATHERDPS (vgather = 1) or scalar loads.
TEXT ·treeLeavesAVX2(SB), NOSPLIT, $0-112
	MOVQ leaf_base+0(FP), DI
	MOVQ leaf_len+8(FP), DX
	MOVQ xs_base+24(FP), SI
	MOVQ feat_base+48(FP), R9
	MOVQ value_base+72(FP), R10
	MOVQ depth+96(FP), BX
	MOVQ vgather+104(FP), R8
	SHRQ $3, DX
	JZ   tl_done

tl_group:
	VPXOR Y5, Y5, Y5         // leaves
	VPCMPEQD Y6, Y6, Y6
	VPSRLD $31, Y6, Y6       // 1 << l, from l = 0
	MOVQ BX, CX

tl_level:
	CMPQ R8, $1
	JNE  tl_scalar
	VGATHERXS(0, Y0)
	JMP  tl_cmp

tl_scalar:
	LOAD8(0, Y0, X0)

tl_cmp:
	VCMPPS $0x1E, (R10), Y0, Y0 // xs[f] > value (ordered: NaN is false)
	VPAND  Y6, Y0, Y0
	VPOR   Y0, Y5, Y5
	VPADDD Y6, Y6, Y6
	ADDQ $32, R9
	ADDQ $32, R10
	DECQ CX
	JNZ  tl_level
	VMOVDQU Y5, (DI)
	ADDQ $32, DI
	DECQ DX
	JNZ  tl_group

tl_done:
	VZEROUPPER
	RET

// ZSTORE stores eight rows of two tiles, each row's first tile half (Y0…)
// at (BX) and its second (the upper halves of Z0…) at 256(BX).
#define ZSTORE(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7) \
	STORE8(BX, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7); \
	VEXTRACTF64X4 $1, Z0, 256(BX); \
	VEXTRACTF64X4 $1, Z1, 288(BX); \
	VEXTRACTF64X4 $1, Z2, 320(BX); \
	VEXTRACTF64X4 $1, Z3, 352(BX); \
	VEXTRACTF64X4 $1, Z4, 384(BX); \
	VEXTRACTF64X4 $1, Z5, 416(BX); \
	VEXTRACTF64X4 $1, Z6, 448(BX); \
	VEXTRACTF64X4 $1, Z7, 480(BX)

// func tilesAVX512(u, a, xt, sign []float32, perm []int32, gauss []float32, units, rows, upper int, idx *[32]int32, vperm int)
//
// tilesAVX2 for d >= 16 with two 8×8 tiles side by side in each 16-lane
// vector: in every 128 values (pair order, see tileOrder) element (r, c)
// of the first tile is at 16c + r and of the second at 16c + 8 + r, so one
// instruction does both tiles' additions. U = len(xt) = max(d, 128) values
// a unit (one block, or 128/d of them). The transpose is tilesAVX2's,
// with VPERMT2PS (indices idx) for its last step; rows are stored two
// stores a row (each tile's rows in natural order), stages h >= 64 run in
// memory as in tilesAVX2, the gather is VGATHERDPS, or with vperm = 1
// and units of 128 or 256 values (d <= 256) the permutes (ZPERM16, or
// ZPERM128 then ZPERMHI per half of a), or with vperm = 2 (d <= 64) the
// permutes from the registers the first pass left a in. Same
// operations on the same operands as the reference loop, so the same
// bits. upper = 1 when d > 64 (stages h >= 64 to run).
TEXT ·tilesAVX512(SB), NOSPLIT, $64-184
	// SKIPSTORE(L) jumps past the first transform's stores (to z5_tiled) when
// vperm = 2 keeps its outputs in registers; otherwise it goes on at L.
#define SKIPSTORE(L) \
	CMPQ 48(SP), $1; \
	JNE  L; \
	CMPQ vperm+176(FP), $2; \
	JEQ  z5_tiled; \
L:

	MOVQ units+144(FP), AX
	TESTQ AX, AX
	JZ    z5_end
	MOVQ AX, 0(SP)          // units left
	MOVQ rows+152(FP), AX
	MOVQ AX, 40(SP)
	MOVQ idx+168(FP), AX
	VMOVDQU32 0(AX), Z16    // the transpose's last step: low halves
	VMOVDQU32 64(AX), Z17   // high halves
	MOVQ xt_len+56(FP), CX  // U
	MOVQ sign_base+72(FP), R8
	MOVQ perm_base+96(FP), R9
	MOVQ gauss_base+120(FP), R10
	MOVQ u_base+0(FP), DI

z5_block:
	MOVQ xt_base+48(FP), SI
	MOVQ a_base+24(FP), BX
	MOVQ CX, DX
	SHRQ $7, DX

z5_first:
	VMOVUPS 0(SI), Z0
	VMULPS  0(R8), Z0, Z0
	VMOVUPS 64(SI), Z1
	VMULPS  64(R8), Z1, Z1
	VMOVUPS 128(SI), Z2
	VMULPS  128(R8), Z2, Z2
	VMOVUPS 192(SI), Z3
	VMULPS  192(R8), Z3, Z3
	VMOVUPS 256(SI), Z4
	VMULPS  256(R8), Z4, Z4
	VMOVUPS 320(SI), Z5
	VMULPS  320(R8), Z5, Z5
	VMOVUPS 384(SI), Z6
	VMULPS  384(R8), Z6, Z6
	VMOVUPS 448(SI), Z7
	VMULPS  448(R8), Z7, Z7
	MOVQ $1, 48(SP)
	JMP  z5_tile

z5_first_ret:
	ADDQ $512, SI
	ADDQ $512, R8
	ADDQ $512, BX
	DECQ DX
	JNZ  z5_first
	MOVQ a_base+24(FP), BX
	MOVQ $1, 8(SP)
	CMPQ upper+160(FP), $1
	JEQ  z5_upper

z5_second:
	MOVQ a_base+24(FP), SI
	MOVQ DI, BX
	MOVQ CX, DX
	SHRQ $7, DX
	CMPQ vperm+176(FP), $0
	JEQ  z5_gather
	MOVL $32, AX
	VPBROADCASTD AX, Z30
	MOVL $64, AX
	VPBROADCASTD AX, Z31
	MOVL $128, AX
	VPBROADCASTD AX, Z29
	CMPQ CX, $128
	JEQ  z5_vperm
	CMPQ CX, $256
	JEQ  z5_vperm256

z5_gather:
	ZGATHER16(0, Z0)
	ZGATHER16(64, Z1)
	ZGATHER16(128, Z2)
	ZGATHER16(192, Z3)
	ZGATHER16(256, Z4)
	ZGATHER16(320, Z5)
	ZGATHER16(384, Z6)
	ZGATHER16(448, Z7)
	MOVQ $2, 48(SP)
	JMP  z5_tile

z5_gather_ret:
	ADDQ $512, R9
	ADDQ $512, R10
	ADDQ $512, BX
	DECQ DX
	JNZ  z5_gather

z5_gathered:
	MOVQ DI, BX
	MOVQ $2, 8(SP)
	CMPQ upper+160(FP), $1
	JEQ  z5_upper

z5_next:
	LEAQ (DI)(CX*4), DI
	DECQ 0(SP)
	JNZ  z5_block

z5_end:
	VZEROUPPER
	RET

z5_vperm: // one pair: the unit's 128 values of a in Z18–Z25
	CMPQ vperm+176(FP), $2
	JEQ  z5_vperm_regs
	ZLOADA(0)

z5_vperm_go:
	ZPERM16(0, Z0)
	ZPERM16(64, Z1)
	ZPERM16(128, Z2)
	ZPERM16(192, Z3)
	ZPERM16(256, Z4)
	ZPERM16(320, Z5)
	ZPERM16(384, Z6)
	ZPERM16(448, Z7)
	MOVQ $3, 48(SP)
	JMP  z5_tile

// vperm = 2 (d <= 64): a is still in the registers the first pass left
// it in, row r of both tiles in one (Z8–Z15, or Z0–Z7 after two row
// stages), and perm indexes that layout: row r of tile t, column c, at
// 16r + 8t + c. No reload of what was just stored.
z5_vperm_regs:
	CMPQ rows+152(FP), $2
	JEQ  z5_vperm_regs0
	VMOVAPS Z8, Z18
	VMOVAPS Z9, Z19
	VMOVAPS Z10, Z20
	VMOVAPS Z11, Z21
	VMOVAPS Z12, Z22
	VMOVAPS Z13, Z23
	VMOVAPS Z14, Z24
	VMOVAPS Z15, Z25
	JMP     z5_vperm_go

z5_vperm_regs0:
	VMOVAPS Z0, Z18
	VMOVAPS Z1, Z19
	VMOVAPS Z2, Z20
	VMOVAPS Z3, Z21
	VMOVAPS Z4, Z22
	VMOVAPS Z5, Z23
	VMOVAPS Z6, Z24
	VMOVAPS Z7, Z25
	JMP     z5_vperm_go

z5_vperm_ret:
	ADDQ $512, R9
	ADDQ $512, R10
	JMP  z5_gathered

z5_vperm256: // each of the unit's two pairs from both halves of a
	ZLOADA(0)
	ZPERM128(0, Z0)
	ZPERM128(64, Z1)
	ZPERM128(128, Z2)
	ZPERM128(192, Z3)
	ZPERM128(256, Z4)
	ZPERM128(320, Z5)
	ZPERM128(384, Z6)
	ZPERM128(448, Z7)
	ZLOADA(512)
	ZPERMHI(0, Z0)
	ZPERMHI(64, Z1)
	ZPERMHI(128, Z2)
	ZPERMHI(192, Z3)
	ZPERMHI(256, Z4)
	ZPERMHI(320, Z5)
	ZPERMHI(384, Z6)
	ZPERMHI(448, Z7)
	MOVQ $4, 48(SP)
	JMP  z5_tile

z5_vperm256_ret:
	ADDQ $512, R9
	ADDQ $512, R10
	ADDQ $512, BX
	DECQ DX
	JNZ  z5_vperm256
	JMP  z5_gathered

// Two tiles given as their columns in Z0–Z7: stages h = 1, 2, 4 across
// the columns, the transpose, the row stages (40(SP) = 1 to 3 of them:
// h = 8, 16, 32) across the rows, each tile's rows stored at (BX) and
// 256(BX); back to the caller named by 48(SP).
z5_tile:
	S1(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	S2(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	S4(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	VUNPCKLPS Z9, Z8, Z0
	VUNPCKHPS Z9, Z8, Z1
	VUNPCKLPS Z11, Z10, Z2
	VUNPCKHPS Z11, Z10, Z3
	VUNPCKLPS Z13, Z12, Z4
	VUNPCKHPS Z13, Z12, Z5
	VUNPCKLPS Z15, Z14, Z6
	VUNPCKHPS Z15, Z14, Z7
	VSHUFPS $0x44, Z2, Z0, Z8
	VSHUFPS $0xEE, Z2, Z0, Z9
	VSHUFPS $0x44, Z3, Z1, Z10
	VSHUFPS $0xEE, Z3, Z1, Z11
	VSHUFPS $0x44, Z6, Z4, Z12
	VSHUFPS $0xEE, Z6, Z4, Z13
	VSHUFPS $0x44, Z7, Z5, Z14
	VSHUFPS $0xEE, Z7, Z5, Z15
	VMOVAPS Z8, Z0
	VPERMT2PS Z12, Z16, Z0
	VMOVAPS Z9, Z1
	VPERMT2PS Z13, Z16, Z1
	VMOVAPS Z10, Z2
	VPERMT2PS Z14, Z16, Z2
	VMOVAPS Z11, Z3
	VPERMT2PS Z15, Z16, Z3
	VMOVAPS Z8, Z4
	VPERMT2PS Z12, Z17, Z4
	VMOVAPS Z9, Z5
	VPERMT2PS Z13, Z17, Z5
	VMOVAPS Z10, Z6
	VPERMT2PS Z14, Z17, Z6
	VMOVAPS Z11, Z7
	VPERMT2PS Z15, Z17, Z7
	MOVQ 40(SP), AX
	CMPQ AX, $3
	JEQ  z5_rows3
	CMPQ AX, $2
	JEQ  z5_rows2
	S1(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	SKIPSTORE(z5_store1)
	ZSTORE(Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	JMP  z5_tiled

z5_rows2:
	S1(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	S2(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	SKIPSTORE(z5_store2)
	ZSTORE(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	JMP  z5_tiled

z5_rows3:
	S1(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	S2(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	S4(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	SKIPSTORE(z5_store3)
	ZSTORE(Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)

z5_tiled:
	CMPQ 48(SP), $1
	JEQ  z5_first_ret
	CMPQ 48(SP), $3
	JEQ  z5_vperm_ret
	CMPQ 48(SP), $4
	JEQ  z5_vperm256_ret
	JMP  z5_gather_ret

// Stages h >= 64 of the block at BX (d = CX values), as in tilesAVX2.
z5_upper:
	UPPER(z5_second, z5_next)

// func noveltyAVX2(z []uint64, cols, d []int32) int32
//
// Σ bit_i·d_i over len(cols) columns (a multiple of 8), eight at a time:
// the 32-bit half of z holding bit c is gathered (VPGATHERDD, index
// c>>5), shifted left by 31 − c&31 so the bit is the sign, spread over
// the lane (VPSRAD $31: 0 or −1) and ANDed with d. Integer sums: any
// order gives the same total.
TEXT ·noveltyAVX2(SB), NOSPLIT, $0-76
	MOVQ z_base+0(FP), SI
	MOVQ cols_base+24(FP), R8
	MOVQ cols_len+32(FP), DX
	MOVQ d_base+48(FP), R9
	VPXOR Y0, Y0, Y0     // sums
	VPCMPEQD Y7, Y7, Y7
	VPSRLD $27, Y7, Y7   // 31 in every lane
	SHRQ $3, DX
	JZ   nv_done

nv_loop:
	VMOVDQU (R8), Y1     // c
	VPSRLD $5, Y1, Y2    // c>>5
	VPANDN Y7, Y1, Y3    // 31 − c&31
	VPCMPEQD Y4, Y4, Y4
	VPGATHERDD Y4, (SI)(Y2*4), Y5
	VPSLLVD Y3, Y5, Y5
	VPSRAD $31, Y5, Y5
	VPAND (R9), Y5, Y5
	VPADDD Y5, Y0, Y0
	ADDQ $32, R8
	ADDQ $32, R9
	DECQ DX
	JNZ  nv_loop

nv_done:
	HSUMD
	MOVL AX, ret+72(FP)
	VZEROUPPER
	RET

// func outsideAVX2(x, lo, k []float32, w uint32) uint32
//
// scaling.outside over len(x) features (a multiple of 8), eight at a
// time, every case computed and the lane's one chosen by masks: u =
// (v−lo)·k − 1 rounded as the Go loop rounds it (no fused operations);
// past the range (u > 1 or u < −1, ordered: NaN is neither) e = u − 1 or
// −1 − u and the lane adds w + trunc(e·w) when e < 1, else 2w; where k = 0
// it adds 2w when v ≠ lo (ordered: a NaN v adds nothing). Integer sums
// (mod 2³²): any order gives the same total.
TEXT ·outsideAVX2(SB), NOSPLIT, $0-84
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), DX
	MOVQ lo_base+24(FP), R8
	MOVQ k_base+48(FP), R9
	MOVL w+72(FP), AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12 // w
	VPADDD Y12, Y12, Y11  // 2w
	VCVTDQ2PS Y12, Y13    // float32(w)
	MOVL $0x3f800000, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // 1
	MOVL $0xbf800000, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14 // −1
	VXORPS Y10, Y10, Y10  // 0
	VPXOR Y0, Y0, Y0      // sums
	SHRQ $3, DX
	JZ   out_done

out_loop:
	VMOVUPS (SI), Y1
	VMOVUPS (R8), Y2
	VMOVUPS (R9), Y3
	VSUBPS Y2, Y1, Y4
	VMULPS Y3, Y4, Y4
	VSUBPS Y15, Y4, Y4             // u
	VSUBPS Y15, Y4, Y5             // u − 1
	VSUBPS Y4, Y14, Y6             // −1 − u
	VCMPPS $0x1E, Y15, Y4, Y7      // u > 1
	VCMPPS $0x11, Y14, Y4, Y8      // u < −1
	VBLENDVPS Y7, Y5, Y6, Y5       // e
	VORPS Y8, Y7, Y7               // past the range
	VCMPPS $0x11, Y15, Y5, Y6      // e < 1
	VMULPS Y13, Y5, Y5
	VCVTTPS2DQ Y5, Y5
	VPADDD Y12, Y5, Y5             // w + trunc(e·w)
	VBLENDVPS Y6, Y5, Y11, Y5
	VPAND Y7, Y5, Y5
	VCMPPS $0x00, Y10, Y3, Y8      // k = 0
	VCMPPS $0x0C, Y2, Y1, Y9       // v ≠ lo
	VPAND Y11, Y9, Y9
	VBLENDVPS Y8, Y9, Y5, Y5
	VPADDD Y5, Y0, Y0
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	DECQ DX
	JNZ  out_loop

out_done:
	HSUMD
	MOVL AX, ret+80(FP)
	VZEROUPPER
	RET
