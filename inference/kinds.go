package inference

// Adding a model kind: the checklist.
//
// A kind of model is what `tritctl train --embedding KIND` names and the
// search lets compete (training.Kind: kernel, mix, thresholds,
// projection, trees). Each is made of parts of the embedding this package
// computes — threshold bits (ModelSpec.Thresholds), tree leaves (Trees),
// a ternary projection (Projection) before random features (Transform) —
// which the bundle carries and the gateway predicts with:
//
//	kind        parts
//	kernel      random features
//	mix         threshold bits, random features
//	thresholds  threshold bits
//	projection  projection, random features
//	trees       tree leaves
//
// training/kinds_checklist_test.go holds this table as code and fails
// when a kind of training's table (training/selection.go) is missing from
// it, is not made of the parts it lists, does not survive the bundle with
// the same predictions, asks for an agent newer than this release, or is
// not named where the list below says; it also fails when a path below no
// longer exists.
//
// A kind that combines parts that exist (as mix did):
//
//   - training/selection.go: the Kind constant and its row of kinds (when
//     the search considers it, its structures and how the budget sizes
//     them: fillP, fillTrees, halveThreshold).
//   - training/train.go: Structure.Embedding names it from a Structure; a
//     new Structure field also goes into api/train.go (api.Structure, the
//     same fields: fleet/train.go converts, fleet/trainjson_test.go checks
//     the JSON names).
//   - training/budget.go: a new way of sizing, if it needs one.
//   - training/config.go: Config.Embedding's comment and its error's list.
//   - tritctl/train.go: the --embedding flag's help, and printSearch's size
//     column when its size is not p.
//   - benchmark/predict_kinds_bench_test.go: kindShapes, its prediction
//     speed beside the int8 MLP of the same bytes.
//   - docs/TRAINING.md: the table of what competes.
//   - training/kinds_checklist_test.go: its row (name, parts, a shape
//     it is eligible for).
//
// A kind with a part of its own (as trees were), besides the above:
//
//   - inference/model.go: the ModelSpec field, Validate, Columns and
//     AxisColumns, newEmbedding and embedding.embed (the part's kept
//     columns, in their place among the others), so that Predict, the
//     Embedder and PredictOutcome compute it.
//   - inference/trees.go is the example of a part's file: its type and
//     Validate, its kept columns prepared at load, the Go loop that
//     specifies them; a fast path, if any, is a method on kernels
//     (inference/kernels.go) in inference/simd_amd64.go with its stub in
//     inference/simd_noamd64.go, tested bit for bit against the Go loop
//     (inference/simd_test.go); Predict allocates nothing
//     (inference/trees_test.go's AllocatesNothing test is the example).
//   - inference/transform_test.go: goldens of the new part's bits, which
//     make test-arm checks on arm64, ARMv6 and ARMv7.
//   - inference/bundle: the section (inference/bundle/encode.go,
//     inference/bundle/decode.go, a file of its own like
//     inference/bundle/trees.go), a new format number
//     (inference/bundle/bundle.go, formatFor in
//     inference/bundle/calibration.go), the first agent release that
//     reads it (inference/bundle/minagent.go,
//     internal/buildinfo/buildinfo.go), what inspect shows
//     (inference/bundle/inspect.go), a golden bundle in
//     inference/bundle/testdata checked on every architecture
//     (inference/bundle/golden_test.go) and seeds for FuzzDecode
//     (inference/bundle/fuzz_test.go).
//   - training: fitting the part on training rows (training/features.go;
//     a learner package, as training/trees), and what the bundle's info
//     says of it (training/export.go).
//   - tritctl/bundle.go: bundle inspect's row; fleet/console/bundles.go:
//     the bundles page's words for a model.
//   - docs/BUNDLE.md (the format), docs/ARCHITECTURE.md ("The model, end
//     to end"), docs/FLEET.md (which agents read it), CHANGELOG.md.
