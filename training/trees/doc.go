// Package trees learns oblivious decision trees by gradient boosting, for
// the tree part of trit's embedding (inference.Trees): each leaf becomes a
// binary column whose weight the ternary linear classifier re-learns, so
// what this package must get right is the tree structure — which
// (feature, threshold) pairs to conjoin — not the leaf values, which are
// only used while boosting.
//
// Method: softmax gradient boosting with second-order (Newton) leaves.
// With K score dimensions (K = 1 and the logistic loss for two classes,
// K = classes otherwise), every round grows one oblivious tree shared by
// all K scores, with vector-valued leaves (CatBoost's multiclass trees).
// Level l of a tree picks the (feature, cut) maximising the total gain
//
//	Σ_leaves Σ_k G_k²/(H_k+λ)   (children of every current leaf)
//
// where G_k and H_k are the sums of the rows' gradients p_k − [y = k] and
// Hessians p_k(1−p_k). Leaf values are −η·G_k/(H_k+λ) and are added to the
// running scores. Splits use only the caller's candidate thresholds (cuts):
// every value is binned once up front, bin(x) = #{cuts c : x > c}, so the
// test x > cut[f][k] is bin > k, and each level accumulates per (leaf,
// feature, bin) gradient and Hessian sums and prefix-sums them over bins
// (the histogram method of LightGBM and XGBoost's hist). A level costs
// O(rows·features·K) for the histograms and O(features·bins·leaves·K) for
// the scan.
//
// Determinism: features are split among workers, each feature's histogram
// is summed in row order in float64, each cut's score is summed over
// leaves and scores in one fixed order (on amd64 four cuts at once, one
// per AVX2 lane, never reassociated) and the best split is chosen in
// feature and cut order, so the trees are bit-identical for any
// Options.Workers and with or without AVX2; row subsampling is driven by
// the seeded splitmix64 stream.
package trees
