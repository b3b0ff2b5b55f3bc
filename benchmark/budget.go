package benchmark

// Bytes as a gateway would store each peer (peers.py applies the same
// formulas; the tests here pin them). d is the number of input features,
// k the number of outputs: the classes, or 1 for two classes (one score).
// Every peer that reads scaled inputs also stores trit's scaler, as trit's
// bundle does: a float16 low and high per feature, 4·d bytes.

// scalerBytes is the scaler: float16 lo and hi per feature.
func scalerBytes(d int) int { return 4 * d }

// outputs is the number of scores a model of classes classes computes.
func outputs(classes int) int {
	if classes == 2 {
		return 1
	}
	return classes
}

// MLPBytes is a one-hidden-layer MLP of width h with int8 weights and, per
// output channel (h hidden units, k outputs), a float32 scale and a
// float32 bias: h·(d+k) + 8·(h+k), plus the scaler.
func MLPBytes(d, classes, h int) int {
	k := outputs(classes)
	return h*(d+k) + 8*(h+k) + scalerBytes(d)
}

// MLPWidth is the widest hidden layer, at most maxH, whose MLPBytes fit
// budget; 0 if not even one unit fits.
func MLPWidth(d, classes, budget, maxH int) int {
	k := outputs(classes)
	h := (budget - 8*k - scalerBytes(d)) / (d + k + 8)
	return max(0, min(h, maxH))
}

// LinearBytes is a linear model with int8 weights and a float32 scale and
// bias per output: k·(d+8), plus the scaler.
func LinearBytes(d, classes int) int {
	return outputs(classes)*(d+8) + scalerBytes(d)
}

// TreeNodeBytes is one node of a stored tree ensemble: a float32
// threshold (or leaf value), a uint16 feature index and a uint16 offset of
// the right child (the left child follows its parent). Trees split raw
// feature values, so they need no scaler.
const TreeNodeBytes = 8

// TreeBytes is an ensemble of nodes nodes in all.
func TreeBytes(nodes int) int { return TreeNodeBytes * nodes }

// RBFBytes is an exact RBF SVM: its support vectors (float32, d each),
// k·(classes−1)… simplified to one float32 dual coefficient per support
// vector and output pair, a float32 intercept per pair of classes, γ, and
// the scaler.
func RBFBytes(d, classes, vectors int) int {
	pairs := classes * (classes - 1) / 2
	return 4*vectors*d + 4*vectors*(classes-1) + 4*pairs + 4 + scalerBytes(d)
}
