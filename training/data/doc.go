// Package data loads labelled datasets into dense float32 matrices, fits
// the feature scaling shipped with a model, and splits data reproducibly —
// at random, or by time for data recorded as a time series.
//
// Supported inputs (docs/DATA.md has the rules):
//   - CSV: delimited text with ',', ';', tab or runs of white space
//     between columns (detected, or Options.Delimiter), RFC 4180 quoting,
//     an optional header row (detected, or Options.Header) whose names
//     become the feature names, the label column by name or 1-based
//     number, time-stamp columns (ISO 8601 and common logger formats, also
//     a date column followed by a time column) that order the rows and are
//     not features;
//   - ARFF (Weka): numeric attributes as features, a nominal class;
//   - LIBSVM/svmlight sparse text and MNIST IDX files;
//
// each optionally compressed with gzip, bzip2 or xz; compression is
// recognised by its magic bytes, not by the file name. Every loader
// records how it read the file in Dataset.Spec (a ReadSpec), which reads
// the next file — a test set, the next day's log — the same way, matching
// feature columns by name.
//
// Columns are numbered from 1 everywhere (Options, ReadSpec, messages);
// Column{Index: -1} is the last column.
//
// Invariants of a Dataset returned by this package:
//   - len(X) == N*D and len(Y) == N; every value in X is finite, but for
//     the Missing values read as missing, which are NaN.
//   - 0 <= Y[i] < len(Classes); Classes holds distinct strings.
//   - Numeric labels are canonical: "+1", "1.0" and "1" are all class "1".
//     Classes are sorted by value when every label is numeric, else
//     lexically.
//   - Features is nil or D distinct non-empty names.
//   - Times is nil or N values, non-decreasing (a reader refuses rows that
//     go back in time), and then Ordered is set. With Groups, Times is
//     non-decreasing within each group (rows sorted by station, then
//     date), not across them.
//   - Groups is nil or N values, 0 <= Groups[i] < len(GroupNames), and
//     GroupNames holds distinct strings.
//
// Malformed input is reported as a *ParseError naming the file, the line
// and, for delimited text, the column (number and header name); nothing
// in this package panics on bad input.
package data
