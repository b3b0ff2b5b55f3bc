#include "textflag.h"

// The row loops unrolled for the common widths (k2 = 2·scores): a row's
// cell and gradients, then its vectors added in order, the same additions
// as the general loop's.
// CELL sets AX to the next row i and BX to its cell's index,
// col[i]·stride + (leaf[i] | slot), or leaves the loop when no row is left.
#define CELL \
	TESTQ   R9, R9; \
	JZ      done; \
	MOVLQSX (R8), AX; \
	MOVBQZX (R10)(AX*1), BX; \
	MOVBQZX (R11)(AX*1), CX; \
	ORQ     R12, CX; \
	IMULQ   R13, BX; \
	ADDQ    CX, BX

// ROW makes BX the address of the row's cell, h[BX·k2], and AX of its
// gradients, gh[i·k2].
#define ROW \
	CELL; \
	IMULQ R14, BX; \
	LEAQ  (DI)(BX*8), BX; \
	IMULQ R14, AX; \
	LEAQ  (SI)(AX*8), AX

// ROWSHIFT is ROW for k2 = 2^(sh−3): the products by shifts.
#define ROWSHIFT(sh) \
	CELL; \
	SHLQ $sh, BX; \
	ADDQ DI, BX; \
	SHLQ $sh, AX; \
	ADDQ SI, AX

#define NEXT(again) \
	ADDQ $4, R8; \
	DECQ R9; \
	JMP  again

#define ADDY(off) \
	VMOVUPD off(BX), Y0; \
	VADDPD  off(AX), Y0, Y0; \
	VMOVUPD Y0, off(BX)

#define ADDX(off) \
	VMOVUPD off(BX), X0; \
	VADDPD  off(AX), X0, X0; \
	VMOVUPD X0, off(BX)

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
	CMPQ R14, $2
	JEQ  row2
	CMPQ R14, $4
	JEQ  row4
	CMPQ R14, $6
	JEQ  row6
	CMPQ R14, $8
	JEQ  row8
	CMPQ R14, $12
	JEQ  row12
	CMPQ R14, $20
	JEQ  row20

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

row2: // two classes
	ROWSHIFT(4)
	ADDX(0)
	NEXT(row2)

row4:
	ROWSHIFT(5)
	ADDY(0)
	NEXT(row4)

row6:
	ROW
	ADDY(0)
	ADDX(32)
	NEXT(row6)

row8:
	ROWSHIFT(6)
	ADDY(0)
	ADDY(32)
	NEXT(row8)

row12: // six classes: the search's worst case
	ROW
	ADDY(0)
	ADDY(32)
	ADDY(64)
	NEXT(row12)

row20: // ten classes (digits)
	ROW
	ADDY(0)
	ADDY(32)
	ADDY(64)
	ADDY(96)
	ADDY(128)
	NEXT(row20)

// func splitScores(s *[4]float64, batch, tot []float64, used int, lambda float64)
TEXT ·splitScores(SB), NOSPLIT, $0-72
	MOVQ         s+0(FP), DI
	MOVQ         batch_base+8(FP), SI
	MOVQ         tot_base+32(FP), DX
	MOVQ         tot_len+40(FP), CX
	VBROADCASTSD lambda+64(FP), Y15
	VXORPD       Y14, Y14, Y14 // +0
	VXORPD       Y0, Y0, Y0    // the four sums

pair:
	TESTQ        CX, CX
	JZ           scored
	VMOVUPD      (SI), Y1      // gl
	VMOVUPD      32(SI), Y2    // the left Hessian sums
	VBROADCASTSD (DX), Y3      // tot[j]
	VBROADCASTSD 8(DX), Y4     // tot[j+1]
	VMAXPD       Y14, Y2, Y5   // max(left, +0)
	VADDPD       Y15, Y5, Y5   // hl
	VSUBPD       Y1, Y3, Y6    // gr = tot[j] − gl
	VSUBPD       Y2, Y4, Y7    // tot[j+1] − left
	VMAXPD       Y14, Y7, Y7
	VADDPD       Y15, Y7, Y7   // hr
	VMULPD       Y1, Y1, Y8    // gl·gl
	VMULPD       Y7, Y8, Y8    // ·hr
	VMULPD       Y6, Y6, Y9    // gr·gr
	VMULPD       Y5, Y9, Y9    // ·hl
	VADDPD       Y9, Y8, Y8
	VMULPD       Y7, Y5, Y10   // hl·hr
	VDIVPD       Y10, Y8, Y8
	VADDPD       Y8, Y0, Y0
	ADDQ         $64, SI
	ADDQ         $16, DX
	SUBQ         $2, CX
	JMP          pair

scored:
	VMOVUPD Y0, (DI)
	VZEROUPPER
	RET

// func cumLanes(batch, cum, h []float64, off *[4]int, width int)
TEXT ·cumLanes(SB), NOSPLIT, $0-88
	MOVQ batch_base+0(FP), DI
	MOVQ cum_base+24(FP), SI
	MOVQ h_base+48(FP), DX
	MOVQ off+72(FP), AX
	MOVQ width+80(FP), CX
	MOVQ 0(AX), R8
	LEAQ (DX)(R8*8), R8        // &h[off[0]]
	MOVQ 8(AX), R9
	LEAQ (DX)(R9*8), R9
	MOVQ 16(AX), R10
	LEAQ (DX)(R10*8), R10
	MOVQ 24(AX), R11
	LEAQ (DX)(R11*8), R11

cum4:
	CMPQ       CX, $4
	JB         cum2
	VMOVUPD    (SI), Y0
	VADDPD     (R8), Y0, Y0    // lane 0: cum + its cells (IEEE addition commutes, bit for bit)
	VADDPD     (R9), Y0, Y1    // lane 1: lane 0 + its cells
	VADDPD     (R10), Y1, Y2
	VADDPD     (R11), Y2, Y3
	VMOVUPD    Y3, (SI)
	VUNPCKLPD  Y1, Y0, Y4      // l0[0] l1[0] l0[2] l1[2]
	VUNPCKHPD  Y1, Y0, Y5      // l0[1] l1[1] l0[3] l1[3]
	VUNPCKLPD  Y3, Y2, Y6      // l2[0] l3[0] l2[2] l3[2]
	VUNPCKHPD  Y3, Y2, Y7      // l2[1] l3[1] l2[3] l3[3]
	VPERM2F128 $0x20, Y6, Y4, Y8  // cell j:   l0 l1 l2 l3
	VPERM2F128 $0x20, Y7, Y5, Y9  // cell j+1
	VPERM2F128 $0x31, Y6, Y4, Y10 // cell j+2
	VPERM2F128 $0x31, Y7, Y5, Y11 // cell j+3
	VMOVUPD    Y8, (DI)
	VMOVUPD    Y9, 32(DI)
	VMOVUPD    Y10, 64(DI)
	VMOVUPD    Y11, 96(DI)
	ADDQ       $32, SI
	ADDQ       $32, R8
	ADDQ       $32, R9
	ADDQ       $32, R10
	ADDQ       $32, R11
	ADDQ       $128, DI
	SUBQ       $4, CX
	JMP        cum4

cum2:
	TESTQ     CX, CX
	JZ        cumdone
	VMOVUPD   (SI), X0
	VADDPD    (R8), X0, X0
	VADDPD    (R9), X0, X1
	VADDPD    (R10), X1, X2
	VADDPD    (R11), X2, X3
	VMOVUPD   X3, (SI)
	VUNPCKLPD X1, X0, X4       // cell j: l0 l1
	VUNPCKLPD X3, X2, X5       //         l2 l3
	VUNPCKHPD X1, X0, X6       // cell j+1
	VUNPCKHPD X3, X2, X7
	VMOVUPD   X4, (DI)
	VMOVUPD   X5, 16(DI)
	VMOVUPD   X6, 32(DI)
	VMOVUPD   X7, 48(DI)

cumdone:
	VZEROUPPER
	RET

// TOTALS adds a bin's new left cells lo to tot[0:half] (at SI) and its
// right cells hi to tot[half:2·half] (at R13), with t0 and t1 as scratch
// registers of the same width.
#define TOTALS(lo, hi, t0, t1) \
	VMOVUPD (SI), t0; \
	VADDPD  lo, t0, t0; \
	VMOVUPD t0, (SI); \
	VMOVUPD (R13), t1; \
	VADDPD  hi, t1, t1; \
	VMOVUPD t1, (R13)

// func subTotal(h, tot []float64, bins, pitch, half int, right bool)
TEXT ·subTotal(SB), NOSPLIT, $0-73
	MOVQ  h_base+0(FP), DI
	MOVQ  tot_base+24(FP), DX
	MOVQ  bins+48(FP), R8
	MOVQ  pitch+56(FP), R9
	SHLQ  $3, R9               // bytes from one bin to the next
	MOVQ  half+64(FP), R10
	MOVBQZX right+72(FP), R11
	LEAQ  (DI)(R10*8), R12     // &sub of bin 0

bin:
	TESTQ R8, R8
	JZ    subdone
	MOVQ  DI, AX               // par
	MOVQ  R12, BX              // sub
	MOVQ  DX, SI               // tot[0:half]
	LEAQ  (DX)(R10*8), R13     // tot[half:2·half]
	MOVQ  R10, CX
	TESTQ R11, R11
	JZ    left4

right4: // par −= sub; the totals gain par and sub
	CMPQ    CX, $4
	JB      right2
	VMOVUPD (AX), Y0
	VMOVUPD (BX), Y1
	VSUBPD  Y1, Y0, Y0
	VMOVUPD Y0, (AX)
	TOTALS(Y0, Y1, Y2, Y3)
	ADDQ    $32, AX
	ADDQ    $32, BX
	ADDQ    $32, SI
	ADDQ    $32, R13
	SUBQ    $4, CX
	JMP     right4

right2:
	TESTQ   CX, CX
	JZ      nextbin
	VMOVUPD (AX), X0
	VMOVUPD (BX), X1
	VSUBPD  X1, X0, X0
	VMOVUPD X0, (AX)
	TOTALS(X0, X1, X2, X3)
	JMP     nextbin

left4: // (par, sub) = (sub, par − sub); the totals gain both
	CMPQ    CX, $4
	JB      left2
	VMOVUPD (AX), Y0
	VMOVUPD (BX), Y1
	VSUBPD  Y1, Y0, Y0         // par − sub
	VMOVUPD Y1, (AX)
	VMOVUPD Y0, (BX)
	TOTALS(Y1, Y0, Y2, Y3)
	ADDQ    $32, AX
	ADDQ    $32, BX
	ADDQ    $32, SI
	ADDQ    $32, R13
	SUBQ    $4, CX
	JMP     left4

left2:
	TESTQ   CX, CX
	JZ      nextbin
	VMOVUPD (AX), X0
	VMOVUPD (BX), X1
	VSUBPD  X1, X0, X0
	VMOVUPD X1, (AX)
	VMOVUPD X0, (BX)
	TOTALS(X1, X0, X2, X3)

nextbin:
	ADDQ R9, DI
	ADDQ R9, R12
	DECQ R8
	JMP  bin

subdone:
	VZEROUPPER
	RET

// func clearCells(h []float64, bins, pitch, off, width int)
TEXT ·clearCells(SB), NOSPLIT, $0-56
	MOVQ   h_base+0(FP), DI
	MOVQ   bins+24(FP), R8
	MOVQ   pitch+32(FP), R9
	MOVQ   off+40(FP), AX
	MOVQ   width+48(FP), R10
	SHLQ   $3, R9             // bytes
	LEAQ   (DI)(AX*8), DI     // &h[off]
	VXORPD Y0, Y0, Y0

clearBin:
	TESTQ R8, R8
	JZ    cleared
	MOVQ  DI, BX
	MOVQ  R10, CX

clearFour:
	CMPQ    CX, $4
	JB      clearTwo
	VMOVUPD Y0, (BX)
	ADDQ    $32, BX
	SUBQ    $4, CX
	JMP     clearFour

clearTwo:
	TESTQ   CX, CX
	JZ      clearNext
	VMOVUPD X0, (BX)
	ADDQ    $16, BX
	SUBQ    $2, CX
	JMP     clearTwo

clearNext:
	ADDQ R9, DI
	DECQ R8
	JMP  clearBin

cleared:
	VZEROUPPER
	RET

// The block kernel: four features' histograms from one pass over the rows
// (histAVX2x4). DI points at the four histograms' slice headers, R10 at
// the four columns', DX at the row's gradients, CX is leaf[i] | slot.
// FCELL(f) sets BX to the address of feature f's cell for row AX.
#define FCELL(f) \
	MOVQ    (f*24)(R10), BX; \
	MOVBQZX (BX)(AX*1), BX; \
	IMULQ   R13, BX; \
	ADDQ    CX, BX; \
	IMULQ   R14, BX; \
	SHLQ    $3, BX; \
	ADDQ    (f*24)(DI), BX

// FADDY and FADDX add a vector of the row's gradients, held in a register,
// to the cell's: h + g, as histAVX2 does.
#define FADDY(off, reg) \
	VADDPD  off(BX), reg, Y0; \
	VMOVUPD Y0, off(BX)

#define FADDX(off, reg) \
	VADDPD  off(BX), reg, X0; \
	VMOVUPD X0, off(BX)

// BROW starts a row: AX = i, CX = leaf[i] | slot, DX = &gh[i·k2]; leaves
// the loop when no row is left.
#define BROW \
	TESTQ   R9, R9; \
	JZ      bdone; \
	MOVLQSX (R8), AX; \
	MOVBQZX (R11)(AX*1), CX; \
	ORQ     R12, CX; \
	MOVQ    AX, DX; \
	IMULQ   R14, DX; \
	LEAQ    (SI)(DX*8), DX

#define BNEXT(again) \
	ADDQ $4, R8; \
	DECQ R9; \
	JMP  again

// func histAVX2x4(hs *[4][]float64, gh []float64, rows []int32, cols *[4][]uint8, leaf []uint8, slot, stride, k2 int)
TEXT ·histAVX2x4(SB), NOSPLIT, $0-112
	MOVQ hs+0(FP), DI
	MOVQ gh_base+8(FP), SI
	MOVQ rows_base+32(FP), R8
	MOVQ rows_len+40(FP), R9
	MOVQ cols+56(FP), R10
	MOVQ leaf_base+64(FP), R11
	MOVQ slot+88(FP), R12
	MOVQ stride+96(FP), R13
	MOVQ k2+104(FP), R14
	CMPQ R14, $2
	JEQ  brow2
	CMPQ R14, $4
	JEQ  brow4
	CMPQ R14, $6
	JEQ  brow6
	CMPQ R14, $8
	JEQ  brow8
	CMPQ R14, $12
	JEQ  brow12
	CMPQ R14, $20
	JEQ  brow20
	JMP  bdone // the caller uses histAVX2 for other widths

brow2:
	BROW
	VMOVUPD (DX), X1
	FCELL(0); FADDX(0, X1)
	FCELL(1); FADDX(0, X1)
	FCELL(2); FADDX(0, X1)
	FCELL(3); FADDX(0, X1)
	BNEXT(brow2)

brow4:
	BROW
	VMOVUPD (DX), Y1
	FCELL(0); FADDY(0, Y1)
	FCELL(1); FADDY(0, Y1)
	FCELL(2); FADDY(0, Y1)
	FCELL(3); FADDY(0, Y1)
	BNEXT(brow4)

brow6:
	BROW
	VMOVUPD (DX), Y1
	VMOVUPD 32(DX), X2
	FCELL(0); FADDY(0, Y1); FADDX(32, X2)
	FCELL(1); FADDY(0, Y1); FADDX(32, X2)
	FCELL(2); FADDY(0, Y1); FADDX(32, X2)
	FCELL(3); FADDY(0, Y1); FADDX(32, X2)
	BNEXT(brow6)

brow8:
	BROW
	VMOVUPD (DX), Y1
	VMOVUPD 32(DX), Y2
	FCELL(0); FADDY(0, Y1); FADDY(32, Y2)
	FCELL(1); FADDY(0, Y1); FADDY(32, Y2)
	FCELL(2); FADDY(0, Y1); FADDY(32, Y2)
	FCELL(3); FADDY(0, Y1); FADDY(32, Y2)
	BNEXT(brow8)

brow12:
	BROW
	VMOVUPD (DX), Y1
	VMOVUPD 32(DX), Y2
	VMOVUPD 64(DX), Y3
	FCELL(0); FADDY(0, Y1); FADDY(32, Y2); FADDY(64, Y3)
	FCELL(1); FADDY(0, Y1); FADDY(32, Y2); FADDY(64, Y3)
	FCELL(2); FADDY(0, Y1); FADDY(32, Y2); FADDY(64, Y3)
	FCELL(3); FADDY(0, Y1); FADDY(32, Y2); FADDY(64, Y3)
	BNEXT(brow12)

brow20:
	BROW
	VMOVUPD (DX), Y1
	VMOVUPD 32(DX), Y2
	VMOVUPD 64(DX), Y3
	VMOVUPD 96(DX), Y4
	VMOVUPD 128(DX), Y5
	FCELL(0); FADDY(0, Y1); FADDY(32, Y2); FADDY(64, Y3); FADDY(96, Y4); FADDY(128, Y5)
	FCELL(1); FADDY(0, Y1); FADDY(32, Y2); FADDY(64, Y3); FADDY(96, Y4); FADDY(128, Y5)
	FCELL(2); FADDY(0, Y1); FADDY(32, Y2); FADDY(64, Y3); FADDY(96, Y4); FADDY(128, Y5)
	FCELL(3); FADDY(0, Y1); FADDY(32, Y2); FADDY(64, Y3); FADDY(96, Y4); FADDY(128, Y5)
	BNEXT(brow20)

bdone:
	VZEROUPPER
	RET
