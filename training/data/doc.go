// Package data loads labelled benchmark datasets into dense float32 matrices,
// fits the feature scaling shipped with a model, and splits data
// reproducibly.
//
// Supported inputs are LIBSVM/svmlight sparse text, dense text (whitespace-
// or comma-separated, label in a chosen column) and MNIST IDX files, each
// optionally compressed with gzip, bzip2 or xz; compression is recognised by
// its magic bytes, not by the file name.
//
// Invariants of a Dataset returned by this package:
//   - len(X) == N*D and len(Y) == N; every value in X is finite.
//   - 0 <= Y[i] < len(Classes); Classes holds distinct strings.
//   - Numeric labels are canonical: "+1", "1.0" and "1" are all class "1".
//     Classes are sorted by value when every label is numeric, else
//     lexically.
//
// Malformed input is reported as a *ParseError naming the file and line;
// nothing in this package panics on bad input.
package data
