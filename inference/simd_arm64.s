#include "textflag.h"

// The arm64 fast path (NEON, which every arm64 core has): FWHT's stages
// h >= 4, where each butterfly's operands are whole 4-lane vectors. Go's
// assembler has no mnemonic for the vector FADD and FSUB, so they are
// written as their encodings (Arm ARM C7.2: FADD/FSUB (vector), Q = 1,
// single precision). Each lane computes the reference loop's sum or
// difference of the same two values; FPCR is Go's default (round to
// nearest, no flush to zero), as for the scalar code.

// func fwhtUpperNEON(x []float32)
//
// fwhtUpper: len(x) a power of two >= 4; stages h = 4, 16, … fused in
// pairs (radix 4), then one radix-2 stage when one is left.
TEXT ·fwhtUpperNEON(SB), NOSPLIT, $0-24
	MOVD x_base+0(FP), R0
	MOVD x_len+8(FP), R1
	MOVD $4, R2

radix4:
	LSL  $2, R2, R3
	CMP  R1, R3
	BGT  radix2
	MOVD $0, R4

block4:
	ADD  R4<<2, R0, R5
	ADD  R2<<2, R5, R6
	ADD  R2<<2, R6, R7
	ADD  R2<<2, R7, R8
	MOVD R2, R9

loop4:
	VLD1 (R5), [V0.S4]
	VLD1 (R6), [V1.S4]
	VLD1 (R7), [V2.S4]
	VLD1 (R8), [V3.S4]
	WORD $0x4e21d404 // FADD V4.4S, V0.4S, V1.4S: V4 = V0 + V1
	WORD $0x4ea1d405 // FSUB V5.4S, V0.4S, V1.4S: V5 = V0 - V1
	WORD $0x4e23d446 // FADD V6.4S, V2.4S, V3.4S: V6 = V2 + V3
	WORD $0x4ea3d447 // FSUB V7.4S, V2.4S, V3.4S: V7 = V2 - V3
	WORD $0x4e26d480 // FADD V0.4S, V4.4S, V6.4S: V0 = V4 + V6
	WORD $0x4e27d4a1 // FADD V1.4S, V5.4S, V7.4S: V1 = V5 + V7
	WORD $0x4ea6d482 // FSUB V2.4S, V4.4S, V6.4S: V2 = V4 - V6
	WORD $0x4ea7d4a3 // FSUB V3.4S, V5.4S, V7.4S: V3 = V5 - V7
	VST1.P [V0.S4], 16(R5)
	VST1.P [V1.S4], 16(R6)
	VST1.P [V2.S4], 16(R7)
	VST1.P [V3.S4], 16(R8)
	SUB  $4, R9
	CBNZ R9, loop4
	ADD  R3, R4
	CMP  R1, R4
	BLT  block4
	LSL  $2, R2
	B    radix4

radix2:
	CMP  R1, R2
	BGE  done
	MOVD R0, R5
	ADD  R2<<2, R0, R6
	MOVD R2, R9

loop2:
	VLD1 (R5), [V0.S4]
	VLD1 (R6), [V1.S4]
	WORD $0x4e21d402 // FADD V2.4S, V0.4S, V1.4S: V2 = V0 + V1
	WORD $0x4ea1d403 // FSUB V3.4S, V0.4S, V1.4S: V3 = V0 - V1
	VST1.P [V2.S4], 16(R5)
	VST1.P [V3.S4], 16(R6)
	SUB  $4, R9
	CBNZ R9, loop2

done:
	RET
