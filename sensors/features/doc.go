// Package features turns windows of sensor readings into feature vectors
// for inference.
//
// A PipelineSpec, configured per model, lists for each input channel a
// window length, statistics and FFT band energies:
//
//	{channel: "accel.x", window: 256, stats: ["rms", "p2p"], bands: [[0, 50], [50, 200]]}
//
// produces, in this order, "accel.x.rms", "accel.x.p2p",
// "accel.x.band_0_50", "accel.x.band_50_200". The ordered names are what a
// model bundle records in its compatibility section; CanProduce checks them
// against the channels the configured sensors provide, and Pipeline.Select
// arranges a pipeline's output in a bundle's order.
//
// Definitions, over the last N samples x[0..N-1] of a channel:
//
//	mean     Σx/N
//	std      sqrt(Σ(x-mean)²/N)              (population)
//	min, max
//	rms      sqrt(Σx²/N)
//	p2p      max - min
//	kurtosis N·Σ(x-mean)⁴ / (Σ(x-mean)²)²   (3 for Gaussian noise; 0 if constant)
//	crest    max|x| / rms                   (0 if rms is 0)
//	band_lo_hi  Σ_k w_k·|X_k|²/N² over the bins k with lo <= k·rate/N < hi,
//	         where X = DFT(x - mean), w_k = 1 for k = 0 and k = N/2 and 2
//	         otherwise; a band whose hi is at least rate/2 also takes the
//	         Nyquist bin. The bands of a partition of [0, rate/2] therefore
//	         add up to std² (Parseval).
//
// This package is standard library only.
package features
