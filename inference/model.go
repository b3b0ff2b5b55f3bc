package inference

import (
	"errors"
	"fmt"
	"math"
	"sync"
)

// ModelSpec is everything that defines a trained model: what a bundle
// carries and what training exports. Turn it into a ready Model with New.
//
// The pipeline: the D raw features are scaled (Scaler); the embedding is
// the threshold bits of the scaled features (Thresholds, optional; see
// ThresholdBits), then the leaf bits of oblivious trees on the scaled
// features (Trees, optional; see Trees), then the random transform's P
// bits, computed on the scaled features or, with a Projection, on their
// projection (then Transform.D is the projection's output count).
// Embedding column c < NT (the number of thresholds) is threshold c;
// column NT + l, l < NL (Trees.Leaves()), is tree leaf l; column NT + NL +
// j is transform column j. P may be 0 when there are thresholds or trees
// (no random features).
//
// Weight vectors: one for a two-class problem (a positive score means
// Classes[1]), else one per class (one-vs-all; the highest score wins).
// Vector c is over the kept embedding columns: coordinate i is column
// Kept[i], and Sign[c], NonZero[c] are its bit planes of (len(Kept)+63)/64
// words (see TernaryDot). Columns whose weight is zero in every vector are
// not kept; their bits are never computed.
type ModelSpec struct {
	Classes    []string    // class labels, len >= 2
	Features   []string    // ordered input feature names; optional (nil or len D)
	Scaler     Scaler      // range scaling of the D raw features
	Thresholds [][]float32 // optional: per input feature, ascending thresholds on its scaled value
	Trees      *Trees      // optional (nil: none): oblivious trees, one column per leaf
	// ThresholdWeight ρ weighs the axis-aligned bits (thresholds and tree
	// leaves) against random features: a vector scores
	// α·(Σ_transform w_j z_j + ρ·Σ_thresholds,leaves w_j z_j), still an
	// integer times α. 0 means 1. At most MaxThresholdWeight.
	ThresholdWeight int32
	Projection      *Projection   // optional: ternary linear map applied before the transform
	Transform       TransformSpec // the random projection (P = 0: none)
	Kept            []int32       // kept embedding columns, strictly ascending, each < NT + NL + P
	Sign            [][]uint64    // per weight vector: sign plane
	NonZero         [][]uint64    // per weight vector: non-zero plane
	Alpha           []float32     // per weight vector: scale α > 0 (score = α·wᵀz)
	// Fingerprint is the training data's firing rates of some kept
	// columns, for drift detection; optional.
	Fingerprint *Fingerprint
	// Calibration maps margins to calibrated confidences and says when a
	// window is unknown (see Calibration, PredictOutcome); optional.
	Calibration *Calibration
}

// MaxThresholdWeight bounds ModelSpec.ThresholdWeight.
const MaxThresholdWeight = 64

// thresholdWeight returns ρ (1 when unset).
func (s *ModelSpec) thresholdWeight() int32 {
	if s.ThresholdWeight == 0 {
		return 1
	}
	return s.ThresholdWeight
}

// NumFeatures returns D, the number of raw input features.
func (s *ModelSpec) NumFeatures() int { return len(s.Scaler.Lo) }

// NumThresholds returns NT, the number of threshold columns.
func (s *ModelSpec) NumThresholds() int {
	n := 0
	for _, t := range s.Thresholds {
		n += len(t)
	}
	return n
}

// NumTreeColumns returns NL, the number of tree leaf columns
// (Trees.Leaves(); 0 without trees).
func (s *ModelSpec) NumTreeColumns() int { return s.Trees.Columns() }

// AxisColumns returns NT + NL, the embedding's axis-aligned prefix: the
// threshold and tree columns, which ThresholdWeight weighs. The transform's
// columns start there.
func (s *ModelSpec) AxisColumns() int { return s.NumThresholds() + s.NumTreeColumns() }

// Columns returns NT + NL + P, the width of the full embedding.
func (s *ModelSpec) Columns() int { return s.AxisColumns() + s.Transform.P }

// Errors returned by New and Predict.
var (
	ErrModel    = errors.New("inference: invalid model")
	ErrInputLen = errors.New("inference: input has the wrong number of features")
)

// Vectors returns the number of weight vectors a model with this many
// classes has: 1 for two classes, else one per class.
func Vectors(classes int) int {
	if classes == 2 {
		return 1
	}
	return classes
}

// NewTernarySpec builds a ModelSpec without thresholds or projection from
// full-length ternary weights (weights[c] has Transform.P coordinates),
// dropping the columns that are zero in every vector.
func NewTernarySpec(tr TransformSpec, sc Scaler, classes []string, weights [][]int8, alpha []float32) (*ModelSpec, error) {
	return NewSpec(&ModelSpec{Classes: classes, Scaler: sc, Transform: tr}, weights, alpha)
}

// NewSpec completes base (Classes, Features, Scaler, Thresholds, Trees,
// ThresholdWeight, Projection and Transform set) with full-length ternary
// weights (weights[c] has one coordinate per embedding column, NT + NL +
// P), dropping the columns that are
// zero in every vector. base is copied; its slices are shared.
func NewSpec(base *ModelSpec, weights [][]int8, alpha []float32) (*ModelSpec, error) {
	if len(weights) != Vectors(len(base.Classes)) || len(alpha) != len(weights) {
		return nil, fmt.Errorf("%w: %d weight vectors and %d scales for %d classes", ErrModel, len(weights), len(alpha), len(base.Classes))
	}
	cols := base.Columns()
	var kept []int32
	for j := range cols {
		for _, w := range weights {
			if len(w) != cols {
				return nil, fmt.Errorf("%w: weight vector of length %d, want %d columns", ErrModel, len(w), cols)
			}
			if w[j] != 0 {
				kept = append(kept, int32(j))
				break
			}
		}
	}
	words := (len(kept) + 63) / 64
	spec := *base
	spec.Kept, spec.Alpha, spec.Sign, spec.NonZero = kept, alpha, nil, nil
	compact := make([]int8, len(kept))
	for _, w := range weights {
		for i, j := range kept {
			compact[i] = w[j]
		}
		s, nz := make([]uint64, words), make([]uint64, words)
		PackTernary(s, nz, compact)
		spec.Sign = append(spec.Sign, s)
		spec.NonZero = append(spec.NonZero, nz)
	}
	return &spec, nil
}

// AllColumns returns a spec for the same model that keeps every embedding
// column: the columns s drops get zero weights. Both predict the same
// scores; a bundle of the one with all columns needs no kept list, which
// is smaller when only a few columns are dropped.
func (s *ModelSpec) AllColumns() *ModelSpec {
	cols := s.Columns()
	out := *s
	out.Kept = make([]int32, cols)
	for j := range out.Kept {
		out.Kept[j] = int32(j)
	}
	words := (cols + 63) / 64
	if fp := s.Fingerprint; fp != nil {
		out.Fingerprint = &Fingerprint{Columns: make([]int32, len(fp.Columns)), Rates: fp.Rates}
		for i, c := range fp.Columns {
			out.Fingerprint.Columns[i] = s.Kept[c]
		}
	}
	out.Sign, out.NonZero = make([][]uint64, len(s.Sign)), make([][]uint64, len(s.Sign))
	for v := range s.Sign {
		out.Sign[v], out.NonZero[v] = make([]uint64, words), make([]uint64, words)
		for i, j := range s.Kept {
			out.Sign[v][j>>6] |= (s.Sign[v][i>>6] >> (i & 63) & 1) << (j & 63)
			out.NonZero[v][j>>6] |= (s.NonZero[v][i>>6] >> (i & 63) & 1) << (j & 63)
		}
	}
	return &out
}

// Validate checks the spec's internal consistency without generating the
// transform.
func (s *ModelSpec) Validate() error {
	d := s.NumFeatures()
	if d < 1 || d > MaxD {
		return fmt.Errorf("%w: %d input features, want 1..%d", ErrModel, d, MaxD)
	}
	nt, err := validateThresholds(s.Thresholds, d)
	if err != nil {
		return err
	}
	if s.ThresholdWeight < 0 || s.ThresholdWeight > MaxThresholdWeight {
		return fmt.Errorf("%w: threshold weight %d, want 0..%d", ErrModel, s.ThresholdWeight, MaxThresholdWeight)
	}
	nl := 0
	if s.Trees != nil {
		if err := s.Trees.Validate(d); err != nil {
			return err
		}
		nl = s.Trees.Columns()
	}
	if nt+nl == 0 && s.ThresholdWeight > 1 {
		return fmt.Errorf("%w: threshold weight %d without thresholds or trees", ErrModel, s.ThresholdWeight)
	}
	transformIn := d
	if s.Projection != nil {
		if err := s.Projection.Validate(d); err != nil {
			return err
		}
		transformIn = s.Projection.Out()
	}
	switch {
	case s.Transform.P == 0 && nt+nl == 0:
		return fmt.Errorf("%w: neither thresholds, trees nor random features", ErrModel)
	case s.Transform.P == 0 && (s.Transform != TransformSpec{} || s.Projection != nil):
		return fmt.Errorf("%w: a transform without columns must be all zero and have no projection", ErrModel)
	case s.Transform.P != 0:
		if err := s.Transform.Validate(); err != nil {
			return err
		}
		if s.Transform.D != transformIn {
			return fmt.Errorf("%w: transform takes %d inputs, the model gives it %d", ErrModel, s.Transform.D, transformIn)
		}
	}
	nc := len(s.Classes)
	if nc < 2 {
		return fmt.Errorf("%w: %d classes, want at least 2", ErrModel, nc)
	}
	seen := make(map[string]bool, nc)
	for _, c := range s.Classes {
		if seen[c] {
			return fmt.Errorf("%w: class %q listed twice", ErrModel, c)
		}
		seen[c] = true
	}
	if s.Features != nil && len(s.Features) != d {
		return fmt.Errorf("%w: %d feature names for %d features", ErrModel, len(s.Features), d)
	}
	cols := nt + nl + s.Transform.P
	for i, j := range s.Kept {
		if j < 0 || int(j) >= cols || (i > 0 && j <= s.Kept[i-1]) {
			return fmt.Errorf("%w: kept column %d (%d) out of order or range", ErrModel, i, j)
		}
	}
	if s.Fingerprint != nil {
		if err := s.Fingerprint.Validate(len(s.Kept)); err != nil {
			return err
		}
	}
	nv, words := Vectors(nc), (len(s.Kept)+63)/64
	if s.Calibration != nil {
		if err := s.Calibration.Validate(s.Fingerprint != nil); err != nil {
			return err
		}
		if o := s.Calibration.Offsets; o != nil && len(o) != nv {
			return fmt.Errorf("%w: %d offsets for %d weight vectors", ErrModel, len(o), nv)
		}
	}
	if len(s.Sign) != nv || len(s.NonZero) != nv || len(s.Alpha) != nv {
		return fmt.Errorf("%w: %d/%d/%d sign planes, non-zero planes and scales, want %d", ErrModel, len(s.Sign), len(s.NonZero), len(s.Alpha), nv)
	}
	for c := range nv {
		if len(s.Sign[c]) != words || len(s.NonZero[c]) != words {
			return fmt.Errorf("%w: vector %d has %d/%d words, want %d", ErrModel, c, len(s.Sign[c]), len(s.NonZero[c]), words)
		}
		if tail := len(s.Kept) % 64; tail != 0 && s.NonZero[c][words-1]>>tail != 0 {
			return fmt.Errorf("%w: vector %d has non-zero bits past the last kept column", ErrModel, c)
		}
		if a := s.Alpha[c]; !(a > 0) || math.IsInf(float64(a), 0) {
			return fmt.Errorf("%w: vector %d has scale α = %g", ErrModel, c, a)
		}
	}
	return nil
}

// Model is a compiled, ready-to-use classifier. It is immutable and safe for
// concurrent use; Predict allocates nothing in steady state.
type Model struct {
	spec    ModelSpec
	emb     embedding
	words   int
	nv      int
	nnz     []int     // per weight vector, its non-zero weights: TernaryDot's popcount(nz)
	offsets []int32   // per weight vector, added to its raw score (Calibration.Offsets); nil: none
	pool    sync.Pool // *workspace
	classes []string
	nov     noveltySum // the fingerprint's, prepared; zero without one
}

// embedding computes a chosen set of embedding columns of raw inputs.
type embedding struct {
	k     kernels          // the fast paths it runs, the gather decided (its Transform's too)
	d     int              // raw input features
	sc    scaling          // the scaler, prepared
	th    thresholdColumns // kept threshold columns (the first kt kept columns)
	kt    int              // kept threshold columns
	trees treeColumns      // kept tree columns (the next ka − kt kept columns)
	ka    int              // kept axis-aligned (threshold and tree) columns, weighed by ρ
	// planes[b-1] is the first kept column of tree plane b ≥ 1 (weighed
	// ρ·2^b); plane b ends where plane b+1 starts, the last at ka.
	planes []int
	proj   *projector  // nil without a projection
	tr     *Transform  // nil when P = 0
	ffKept []int32     // kept transform columns (kept[ka:] − NT − NL)
	plan   *columnPlan // how ffKept is computed
	cols   int         // embedding columns computed: len(kept)
	words  int         // (len(kept)+63)/64
}

func newEmbedding(spec *ModelSpec, kept []int32, k kernels) (embedding, error) {
	d := spec.NumFeatures()
	sc, err := spec.Scaler.prepare(d)
	if err != nil {
		return embedding{}, err
	}
	nt, na := spec.NumThresholds(), spec.AxisColumns()
	kt := 0
	for kt < len(kept) && int(kept[kt]) < nt {
		kt++
	}
	ka := kt
	for ka < len(kept) && int(kept[ka]) < na {
		ka++
	}
	k = k.resolved()
	e := embedding{
		k:     k,
		d:     d,
		sc:    sc,
		th:    newThresholdColumns(spec.Thresholds, kept[:kt]),
		kt:    kt,
		trees: newTreeColumns(&k, spec.Trees, nt, kt, kept[kt:ka]),
		ka:    ka,
		cols:  len(kept),
		words: (len(kept) + 63) / 64,
	}
	if b := spec.Trees.NumPlanes(); b > 1 {
		nl, k := spec.Trees.Leaves(), kt
		for plane := 1; plane < b; plane++ {
			for k < ka && int(kept[k]) < nt+plane*nl {
				k++
			}
			e.planes = append(e.planes, k)
		}
	}
	if spec.Projection != nil {
		pr := newProjector(spec.Projection, d)
		e.proj = &pr
	}
	if spec.Transform.P > 0 {
		if e.tr, err = newTransform(spec.Transform, k); err != nil {
			return embedding{}, err
		}
		e.ffKept = make([]int32, len(kept)-ka)
		for i, c := range kept[ka:] {
			e.ffKept[i] = c - int32(na)
		}
		e.plan = e.tr.columnPlan(e.ffKept)
	}
	return e, nil
}

type workspace struct {
	ws     *Workspace // nil when P = 0
	xs     []float32  // scaled input
	leaves []int32    // per kept tree, its leaf
	v      []float32  // projected input (with a projection)
	z      []uint64   // kept embedding bits
	raw    []int32    // integer scores
}

func (e *embedding) newWorkspace(nv int) *workspace {
	w := &workspace{
		xs:     make([]float32, e.d),
		z:      make([]uint64, e.words),
		raw:    make([]int32, nv),
		leaves: make([]int32, e.trees.trees()),
	}
	if e.tr != nil {
		w.ws = e.tr.NewWorkspace()
	}
	if e.proj != nil {
		w.v = make([]float32, len(e.proj.scale))
	}
	return w
}

// embed computes the kept embedding bits of the raw input x into w.z.
func (e *embedding) embed(w *workspace, x []float32) {
	e.sc.apply(w.xs, x)
	clear(w.z)
	e.th.embed(&e.k, w.z, w.xs)
	e.trees.embed(&e.k, w.z, w.xs, w.leaves)
	if e.tr == nil {
		return
	}
	in := w.xs
	if e.proj != nil {
		e.proj.apply(&e.k, w.v, w.xs)
		in = w.v
	}
	e.tr.embedColumns(w.z, e.ka, in, e.ffKept, e.plan, w.ws)
}

// New validates spec, regenerates its transform and returns the model. The
// spec's slices are not copied: do not modify them afterwards.
func New(spec *ModelSpec) (*Model, error) { return newModel(spec, cpu) }

// newModel is New with the kernels k (tests: every path on one machine).
func newModel(spec *ModelSpec, k kernels) (*Model, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	emb, err := newEmbedding(spec, spec.Kept, k)
	if err != nil {
		return nil, err
	}
	m := &Model{
		spec:    *spec,
		emb:     emb,
		words:   emb.words,
		nv:      Vectors(len(spec.Classes)),
		classes: spec.Classes,
	}
	if spec.Fingerprint != nil {
		m.nov = newNoveltySum(spec.Fingerprint)
	}
	if c := spec.Calibration; c != nil && len(c.Offsets) > 0 {
		m.offsets = c.Offsets
	}
	m.nnz = make([]int, m.nv)
	for c := range m.nnz {
		m.nnz[c] = onesCount(spec.NonZero[c][:emb.words])
	}
	m.pool.New = func() any { return m.emb.newWorkspace(m.nv) }
	return m, nil
}

// Embedder computes every column of a model's embedding (thresholds, tree
// leaves, then transform): what training learns weights for. Its bits are exactly those
// Predict computes for the columns a model keeps. Safe for concurrent use.
type Embedder struct {
	emb  embedding
	pool sync.Pool
}

// NewEmbedder returns the embedder of spec's Scaler, Thresholds, Trees,
// Projection and Transform (its classes and weights are ignored and may be empty).
func NewEmbedder(spec *ModelSpec) (*Embedder, error) { return newEmbedder(spec, cpu) }

// newEmbedder is NewEmbedder with the kernels k.
func newEmbedder(spec *ModelSpec, k kernels) (*Embedder, error) {
	s := *spec
	s.Classes, s.Kept, s.Sign, s.NonZero, s.Alpha = []string{"0", "1"}, nil, [][]uint64{nil}, [][]uint64{nil}, []float32{1}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	all := make([]int32, s.Columns())
	for i := range all {
		all[i] = int32(i)
	}
	emb, err := newEmbedding(&s, all, k)
	if err != nil {
		return nil, err
	}
	e := &Embedder{emb: emb}
	e.pool.New = func() any { return e.emb.newWorkspace(0) }
	return e, nil
}

// Columns returns NT + NL + P, the number of bits Embed writes.
func (e *Embedder) Columns() int { return e.emb.cols }

// Embed writes every embedding bit of the raw input x (len D) into dst
// ((Columns()+63)/64 words), bit c = column c.
func (e *Embedder) Embed(dst []uint64, x []float32) error {
	if len(x) != e.emb.d {
		return ErrInputLen
	}
	w := e.pool.Get().(*workspace)
	defer e.pool.Put(w)
	e.emb.embed(w, x)
	copy(dst[:e.emb.words], w.z)
	return nil
}

// Spec returns the model's definition. Treat it as read-only.
func (m *Model) Spec() *ModelSpec { return &m.spec }

// Classes returns the class labels; Predict returns indexes into it.
func (m *Model) Classes() []string { return m.classes }

// NumFeatures returns D, the number of raw input features Predict takes.
func (m *Model) NumFeatures() int { return m.emb.d }

// Transform returns the model's generated transform (nil when P = 0).
func (m *Model) Transform() *Transform { return m.emb.tr }

// Predict classifies the raw feature vector x (len NumFeatures) and returns
// the index of the predicted class. If scores is not nil it receives the
// per-class scores α_c·w_cᵀz (len(scores) >= len(Classes)); for two classes
// they are (-s, s) with s the single vector's score, and a score of exactly
// 0 predicts Classes[1]. Among equal scores the lowest class index wins.
func (m *Model) Predict(scores []float32, x []float32) (int, error) {
	if len(x) != m.emb.d {
		return -1, ErrInputLen
	}
	w := m.pool.Get().(*workspace)
	defer m.pool.Put(w)
	m.emb.embed(w, x)
	return m.score(scores, w.raw, w.z, m.nnz), nil
}

// PredictEmbed is Predict that also writes the kept embedding bits of x
// into z ((len(Kept)+63)/64 words), for callers that count them (see
// Fingerprint.Count) or keep them, at no extra cost.
func (m *Model) PredictEmbed(scores []float32, z []uint64, x []float32) (int, error) {
	if len(x) != m.emb.d {
		return -1, ErrInputLen
	}
	w := m.pool.Get().(*workspace)
	defer m.pool.Put(w)
	m.emb.embed(w, x)
	copy(z[:m.words], w.z)
	return m.score(scores, w.raw, w.z, m.nnz), nil
}

// PredictRaw is Predict with the integer scores: raw (len >= the number
// of weight vectors) receives each vector's w_cᵀz (threshold and tree
// columns counted ρ times) plus its calibration offset, the exact integers
// a gateway computes before the float scales α_c; the self-test compares
// them.
func (m *Model) PredictRaw(raw []int32, x []float32) (int, error) {
	if len(x) != m.emb.d {
		return -1, ErrInputLen
	}
	w := m.pool.Get().(*workspace)
	defer m.pool.Put(w)
	m.emb.embed(w, x)
	c := m.score(nil, w.raw, w.z, nil)
	copy(raw[:m.nv], w.raw)
	return c, nil
}

// score turns the kept embedding bits z into class scores and a
// prediction. nnz is each weight vector's count of non-zero weights
// (m.nnz, counted at load), or nil to count them afresh: PredictRaw does,
// so that a self-test sees any flipped weight bit, whatever the input.
func (m *Model) score(scores []float32, raw []int32, z []uint64, nnz []int) int {
	rho := m.spec.thresholdWeight()
	for c := range m.nv {
		var n int
		if nnz != nil {
			n = nnz[c]
		} else {
			n = onesCount(m.spec.NonZero[c][:len(z)])
		}
		raw[c] = int32(n - 2*ternaryDiffer(&m.emb.k, z, m.spec.Sign[c], m.spec.NonZero[c])) // TernaryDot
		if rho != 1 && m.emb.ka > 0 {
			raw[c] += (rho - 1) * int32(ternaryDotPrefix(&m.emb.k, z, m.spec.Sign[c], m.spec.NonZero[c], m.emb.ka))
		}
		// Tree plane b counts ρ·2^b times: ρ of them above, 2^b − 1 more.
		for b, from := range m.emb.planes {
			to := m.emb.ka
			if b+1 < len(m.emb.planes) {
				to = m.emb.planes[b+1]
			}
			if to > from {
				dot := ternaryDotPrefix(&m.emb.k, z, m.spec.Sign[c], m.spec.NonZero[c], to) - ternaryDotPrefix(&m.emb.k, z, m.spec.Sign[c], m.spec.NonZero[c], from)
				raw[c] += rho * (2<<b - 1) * int32(dot)
			}
		}
		if m.offsets != nil {
			raw[c] += m.offsets[c]
		}
	}
	if m.nv == 1 {
		s := m.spec.Alpha[0] * float32(raw[0])
		if scores != nil {
			scores[0], scores[1] = -s, s
		}
		if raw[0] >= 0 {
			return 1
		}
		return 0
	}
	best, bestScore := 0, float32(math.Inf(-1))
	for c := range m.nv {
		s := m.spec.Alpha[c] * float32(raw[c])
		if scores != nil {
			scores[c] = s
		}
		if s > bestScore {
			best, bestScore = c, s
		}
	}
	return best
}

// EmbedKept writes the bits of the model's kept columns for the raw input x
// into dst ((len(Kept)+63)/64 words). It exposes the exact bits Predict
// scores, for golden tests and cross-architecture checks.
func (m *Model) EmbedKept(dst []uint64, x []float32) error {
	if len(x) != m.emb.d {
		return ErrInputLen
	}
	w := m.pool.Get().(*workspace)
	defer m.pool.Put(w)
	m.emb.embed(w, x)
	copy(dst[:m.words], w.z)
	return nil
}
