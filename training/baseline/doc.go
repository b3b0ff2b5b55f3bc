// Package baseline implements the methods the paper compares trit with, so
// that `trit-bench paper` can reproduce its comparison table on any dataset:
//
//   - RFE: random Fourier features √(2/p)·cos(Rᵀx + b) with a dense Gaussian R;
//   - Fastfood: the same features over the Fastfood-structured projection of
//     package inference (Transform.Project and Transform.Offset);
//   - BJLE: binary Johnson–Lindenstrauss embedding sign(Rᵀx), dense R;
//   - BCSIK: sign(cos(Rᵀx + b) + t), dense R (Raginsky & Lazebnik);
//   - trit-full: trit's own Fastfood BCSIK bits (Transform.Embed, exactly the
//     gateway's bits) with full-precision coefficients (the paper's "Our
//     Method");
//   - trit-ternary: training.Train, ternary coefficients (the paper's "Our
//     Method-b").
//
// The first five train a full-precision linear SVM (package linear, hinge
// loss, bias feature 1) one-vs-rest on the features. Every feature map is
// scaled so that ‖z‖² ≈ 1 (binary features are ±1/√p), as the Gaussian
// kernel has k(x, x) = 1: C then means the same for all five and the paper's
// C grid 10⁻³…10³ is the usual kernel-SVM grid. Scaling does not change
// which linear classifiers exist, only how C trades off.
//
// Inputs are min-max scaled to [-1, 1] on the training data (data.FitScaler),
// as in the paper. Dense matrices are float32; the feature matrix of n rows
// is n·p float32 (3.8 GB for covtype's 464,810 rows at p = 2048), which
// package linear reads in place.
//
// Memory is reported in the paper's accounting (its Table 1): the
// transformation parameters, the embedding of one sample, and the
// classifier, with c the number of weight vectors (1 for two classes).
package baseline
