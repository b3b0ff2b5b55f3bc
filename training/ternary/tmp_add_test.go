package ternary

import "testing"

func BenchmarkTmpAddColumn(b *testing.B) {
	const n, p = 60000, 2048
	z, yb, y := featureProblem(1, n, p, 10)
	w0 := centroidStart(z, y)
	o := Options{Lambda: 1 / (2 * n * 0.001), Binary: true, Workers: 1}
	od := o.withDefaults()
	s := newSolver(z, yb, w0, 1.0/p, &od, z.P)
	s.setAlpha(s.alpha)
	s.alphaStep()
	s.rebuildActive()
	b.ResetTimer()
	k := 0
	for b.Loop() {
		s.addColumn(k%p, 2)
		s.addColumn(k%p, -2)
		k++
	}
}

func BenchmarkTmpLowerTrial(b *testing.B) {
	const n, p = 60000, 2048
	z, yb, y := featureProblem(1, n, p, 10)
	w0 := centroidStart(z, y)
	o := Options{Lambda: 1 / (2 * n * 0.001), Binary: true, Workers: 1}
	od := o.withDefaults()
	s := newSolver(z, yb, w0, 1.0/p, &od, z.P)
	s.setAlpha(s.alpha)
	s.alphaStep()
	s.rebuildActive()
	b.Logf("active %d deep %d zeroFrom %d", len(s.active), s.nDeep, s.zeroFrom)
	b.ResetTimer()
	k := 0
	for b.Loop() {
		s.lowerTrial(k%p, 2, 2)
		k++
	}
}
