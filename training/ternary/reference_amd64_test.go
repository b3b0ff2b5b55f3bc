package ternary

import "testing"

// The AVX2 kernels give the reference's weights too on a CPU that has
// AVX-512, where the solver would otherwise take addColumn512 and
// deepAgree512 and never run them (TestSolveMatchesReference covers the
// path the CPU takes; TestAddColumnAVX2 and TestDeepAgreeAVX2 the kernels
// alone).
func TestSolveMatchesReferenceAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU: the Go loops are the only path")
	}
	if !useAVX512 && !usePopcnt512 {
		t.Skip("no AVX-512 on this CPU: TestSolveMatchesReference runs the AVX2 path")
	}
	a, p := useAVX512, usePopcnt512
	useAVX512, usePopcnt512 = false, false
	defer func() { useAVX512, usePopcnt512 = a, p }()
	TestSolveMatchesReference(t)
}
