package linear

import "errors"

// Errors returned by Train and TrainOneVsRest, wrapped with details of what
// and where; test with errors.Is.
var (
	// ErrShape reports inconsistent sizes: n ≤ 0, p ≤ 0, len(x) ≠ n·p or a
	// label slice whose length is not n.
	ErrShape = errors.New("linear: inconsistent data shape")
	// ErrLabel reports a two-class label other than −1 or +1, a class label
	// outside [0, classes) or a class count below 2.
	ErrLabel = errors.New("linear: invalid label")
	// ErrNonFinite reports a NaN or infinite feature value.
	ErrNonFinite = errors.New("linear: non-finite feature value")
	// ErrOption reports an invalid field of Options.
	ErrOption = errors.New("linear: invalid option")
)
