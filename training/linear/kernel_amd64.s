#include "textflag.h"

// func dot4Int8AVX2(s *[4]float64, w []float64, x []int8)
TEXT ·dot4Int8AVX2(SB), NOSPLIT, $0-56
	MOVQ   s+0(FP), DX
	MOVQ   w_base+8(FP), SI
	MOVQ   w_len+16(FP), CX
	MOVQ   x_base+32(FP), DI
	VMOVUPD (DX), Y0           // the partial sums s0..s3

loop:
	CMPQ      CX, $4
	JB        done
	VPMOVSXBD (DI), X1         // four int8 as int32
	VCVTDQ2PD X1, Y1           // as float64, exactly
	VMULPD    (SI), Y1, Y1     // w·x, rounded
	VADDPD    Y1, Y0, Y0       // s += w·x, rounded
	ADDQ      $32, SI
	ADDQ      $4, DI
	SUBQ      $4, CX
	JMP       loop

done:
	VMOVUPD Y0, (DX)
	VZEROUPPER
	RET

// func axpyInt8AVX2(a float64, x []int8, w []float64)
TEXT ·axpyInt8AVX2(SB), NOSPLIT, $0-56
	VBROADCASTSD a+0(FP), Y2
	MOVQ x_base+8(FP), DI
	MOVQ w_base+32(FP), SI
	MOVQ w_len+40(FP), CX

loop:
	CMPQ      CX, $4
	JB        done
	VPMOVSXBD (DI), X1
	VCVTDQ2PD X1, Y1
	VMULPD    Y2, Y1, Y1       // a·x, rounded
	VADDPD    (SI), Y1, Y1     // w + a·x, rounded
	VMOVUPD   Y1, (SI)
	ADDQ      $32, SI
	ADDQ      $4, DI
	SUBQ      $4, CX
	JMP       loop

done:
	VZEROUPPER
	RET
