// Package linear trains two-class and one-vs-rest linear SVMs by dual
// coordinate descent (Hsieh, Chang, Lin, Keerthi, Sundararajan, "A Dual
// Coordinate Descent Method for Large-scale Linear SVM", ICML 2008), the
// algorithm of LIBLINEAR's solvers L2R_L1LOSS_SVC_DUAL (-s 3, Hinge) and
// L2R_L2LOSS_SVC_DUAL (-s 1, SquaredHinge).
//
// The primal problem, in LIBLINEAR's form, is
//
//	min_w ½‖w‖² + C Σ_i ξ(w; x_i, y_i)
//
// with ξ = max(0, 1 − y wᵀx) (Hinge) or its square (SquaredHinge). With a
// bias B > 0 every row is extended by a constant feature B whose weight is
// regularised like the others (LIBLINEAR -B). Its dual is the box-constrained
// quadratic program
//
//	min_α ½ αᵀQ̄α − eᵀα,  0 ≤ α_i ≤ U,  Q̄ = Q + D,  Q_ij = y_i y_j x_iᵀx_j
//
// where U = C, D = 0 for Hinge and U = ∞, D = I/(2C) for SquaredHinge.
// The solver keeps w = Σ α_i y_i x_i up to date and minimises the dual one
// coordinate at a time, in a fresh random order every outer iteration,
// shrinking variables that sit at a bound with a gradient pointing out of
// the box. It stops when the spread of the projected gradient over all
// variables is at most Options.Eps.
//
// Invariants:
//   - x is never copied or converted: rows are read in place as float32 and
//     w, α and all sums are float64.
//   - For a given Options.Seed the result is a function of the inputs only:
//     the permutations come from an integer-only PRNG, and TrainOneVsRest
//     gives the same models whatever GOMAXPROCS is.
package linear
