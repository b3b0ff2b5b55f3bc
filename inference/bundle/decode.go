package bundle

import (
	"bytes"
	"crypto/ed25519"
	"math"
	"math/bits"
	"strconv"
	"time"

	"github.com/trit-iot/trit/inference"
)

// DecodeOptions control Decode. A nil *DecodeOptions, like zero fields,
// means the defaults.
type DecodeOptions struct {
	// MaxSize is the largest bundle accepted, in bytes, checked before
	// anything else is read. Zero or negative means DefaultMaxSize.
	MaxSize int
	// Trusted are the keys a signature may come from. A nil set trusts no
	// key, so every signed bundle fails with ErrUnknownKey.
	Trusted *KeySet
	// AllowUnsigned accepts bundles whose key ID and signature are all
	// zero (what Encode writes), for inspection and tests. A signed bundle
	// is verified whatever this says.
	AllowUnsigned bool
	// Now is the clock for the expiry check; nil means time.Now.
	Now func() time.Time
}

// Decode checks and decodes a bundle, in this order:
//
//  1. size: len(data) <= MaxSize (ErrTooLarge), before anything is read;
//  2. magic (ErrBadMagic), format version 1 to 5 (ErrVersion), minimum
//     length (ErrTruncated);
//  3. the trailer: an all-zero one is unsigned (ErrUnsigned unless
//     AllowUnsigned); otherwise the key ID must be in Trusted
//     (ErrUnknownKey) and the signature must verify (ErrSignature) — before
//     any field is parsed;
//  4. every section of that format, bounds-checked before each allocation
//     (ErrTruncated, ErrInvalid; from format 2 on a form that is not the
//     canonical one is ErrInvalid too), and nothing left between the last
//     section and the trailer (ErrTrailing);
//  5. expiry: ExpiresAt set and before Now (ErrExpired);
//  6. the model spec's own Validate (ErrInvalid, with the inference error
//     as Cause).
//
// Every error is a *FormatError wrapping one of those sentinels. Decode does
// not build the model or run the self-test: call inference.New(b.Spec) and
// SelfTest for that. The returned Bundle does not alias data.
func Decode(data []byte, opt *DecodeOptions) (*Bundle, error) {
	var o DecodeOptions
	if opt != nil {
		o = *opt
	}
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultMaxSize
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if len(data) > o.MaxSize {
		return nil, formatErr(ErrTooLarge, "", 0, "%d bytes, cap %d", len(data), o.MaxSize)
	}
	if err := checkPreamble(data); err != nil {
		return nil, err
	}
	if err := verify(data, o.Trusted, o.AllowUnsigned); err != nil {
		return nil, err
	}
	b, _, err := parse(data)
	if err != nil {
		return nil, err
	}
	if exp := b.Header.ExpiresAt; !exp.IsZero() && exp.Before(o.Now()) {
		return nil, formatErr(ErrExpired, "header", -1, "expired at %s", exp.Format(time.RFC3339))
	}
	if err := b.Spec.Validate(); err != nil {
		return nil, &FormatError{Section: "model", Offset: -1, Err: ErrInvalid, Cause: err}
	}
	return b, nil
}

// minClassBytes is the least a class adds to a bundle: its label's length
// byte and one byte of label, and (from 3 classes on, one vector per class)
// its vector's flags byte, its α and its self-test score.
const minClassBytes = 2 + 1 + 4 + 1

// checkPreamble checks magic, version and that the bundle is long enough to
// hold a trailer.
func checkPreamble(data []byte) error {
	n := min(len(data), len(Magic))
	if !bytes.Equal(data[:n], []byte(Magic)[:n]) {
		return formatErr(ErrBadMagic, "magic", 0, "first bytes are %q, want %q", data[:n], Magic)
	}
	if len(data) < preambleSize {
		return formatErr(ErrTruncated, "magic", len(data), "%d bytes", len(data))
	}
	if v := data[len(Magic)]; v < OldestFormat || v > FormatVersion {
		return formatErr(ErrVersion, "magic", len(Magic), "format version %d, this decoder reads %d to %d", v, OldestFormat, FormatVersion)
	}
	if len(data) < minSize {
		return formatErr(ErrTruncated, "signature", len(data), "%d bytes, a bundle has at least %d", len(data), minSize)
	}
	return nil
}

// trailer returns the key ID and signature of a bundle that passed
// checkPreamble, and whether they are all zero (unsigned).
func trailer(data []byte) (id [KeyIDSize]byte, sig [64]byte, unsigned bool) {
	t := data[len(data)-trailerSize:]
	copy(id[:], t)
	copy(sig[:], t[KeyIDSize:])
	unsigned = id == [KeyIDSize]byte{} && sig == [64]byte{}
	return id, sig, unsigned
}

// verify checks the trailer against the trusted keys.
func verify(data []byte, trusted *KeySet, allowUnsigned bool) error {
	id, sig, unsigned := trailer(data)
	at := len(data) - trailerSize
	if unsigned {
		if allowUnsigned {
			return nil
		}
		return formatErr(ErrUnsigned, "signature", at, "key ID and signature are all zero")
	}
	pub, ok := trusted.lookup(id)
	if !ok {
		return formatErr(ErrUnknownKey, "signature", at, "key ID %x is not among the %d trusted keys", id, trusted.Len())
	}
	if !ed25519.Verify(pub, data[:len(data)-64], sig[:]) {
		return formatErr(ErrSignature, "signature", at+KeyIDSize, "Ed25519 signature by key %x does not verify", id)
	}
	return nil
}

// layout is how a bundle was encoded, for Inspect.
type layout struct {
	sections        []Section
	scalerForm      byte
	thresholdsForm  byte
	keptForm        byte
	vectorForms     []byte // per weight vector: packPlanes, packSign or packBase3
	projectionForms []byte // per projection output
	unsigned        bool
}

// parse decodes the sections of a bundle that passed checkPreamble. It
// checks every field but neither the signature, the expiry nor
// ModelSpec.Validate.
func parse(data []byte) (*Bundle, *layout, error) {
	format := data[len(Magic)]
	v2 := format >= 2
	r := &reader{data: data[:len(data)-trailerSize], pos: preambleSize}
	b := &Bundle{Format: int(format)}
	l := &layout{sections: []Section{{Name: "magic", Offset: 0, Size: preambleSize}}}
	start := r.pos
	begin := func(name string) {
		r.section = name
		start = r.pos
	}
	end := func() {
		l.sections = append(l.sections, Section{Name: r.section, Offset: start, Size: r.pos - start})
	}

	begin("header")
	b.Header.ModelID = r.str("model ID", MaxModelID, false)
	at := r.pos
	b.Header.Release = r.u64("release")
	if r.err == nil && b.Header.Release == 0 {
		r.fail(ErrInvalid, at, "release counter is 0, want >= 1")
	}
	at = r.pos
	created, expires := int64(r.u64("created-at")), int64(r.u64("expires-at"))
	if r.err == nil {
		if err := checkTimes(created, expires); err != nil {
			r.fail(ErrInvalid, at, "%v", err)
		}
	}
	b.Header.CreatedAt, b.Header.ExpiresAt = unixTime(created), unixTime(expires)
	end()

	// Every feature costs at least 4 bytes of scaler later on.
	begin("compat")
	d := r.count("feature count", 1, inference.MaxD, 4)
	at = r.pos
	nNames := r.count("feature names", 0, d, 2)
	if r.err == nil && nNames != 0 && nNames != d {
		r.fail(ErrInvalid, at, "%d feature names for %d features, want 0 or all", nNames, d)
	}
	if nNames > 0 && r.err == nil {
		b.Compat.Features = make([]string, nNames)
		seen := make(map[string]bool, nNames)
		for i := range b.Compat.Features {
			at := r.pos
			n := r.str("feature name", MaxLabel, false)
			if r.err == nil && seen[n] {
				r.fail(ErrInvalid, at, "feature name %d: %q listed twice", i, n)
			}
			seen[n] = true
			b.Compat.Features[i] = n
		}
	}
	at = r.pos
	b.Compat.MinAgentVersion = r.str("minimum agent version", MaxVersion, false)
	if r.err == nil {
		if _, err := parseVersion(b.Compat.MinAgentVersion); err != nil {
			r.fail(ErrInvalid, at, "minimum agent version %q: %v", b.Compat.MinAgentVersion, err)
		}
	}
	b.Compat.Hardware = r.str("hardware label", MaxLabel, true)
	end()

	// Counting minClassBytes a class before allocating per class keeps the
	// class list, its duplicate check and the per-vector slices below
	// within the bundle's size.
	begin("classes")
	nc := r.count("class count", 2, MaxClasses, minClassBytes)
	var classes []string
	if r.err == nil {
		classes = make([]string, nc)
		seen := make(map[string]bool, nc)
		for i := range classes {
			at := r.pos
			classes[i] = r.str("class label", MaxLabel, false)
			if r.err == nil && seen[classes[i]] {
				r.fail(ErrInvalid, at, "class %d: %q listed twice", i, classes[i])
			}
			seen[classes[i]] = true
		}
	}
	end()

	begin("scaler")
	sc := r.scaler(d, v2, l)
	end()

	var th [][]float32
	var trees *inference.Trees
	var proj *inference.Projection
	var rho int32
	nt := 0
	if v2 {
		begin("thresholds")
		th, nt, rho = r.thresholds(d, l)
		end()
		if format >= 3 {
			begin("trees")
			trees, rho = r.trees(d, nt, rho, format)
			end()
		}
		begin("projection")
		proj = r.projection(d, format, l)
		end()
	}

	begin("transform")
	var tr inference.TransformSpec
	at = r.pos
	gen := r.uvarint("generator version")
	if r.err == nil && gen > 1<<32-1 {
		r.fail(ErrInvalid, at, "generator version %d does not fit 32 bits", gen)
	}
	tr.Generator = uint32(gen)
	tr.Seed = r.u64("seed")
	sigmaBits := r.u64("sigma")
	tr.Sigma = math.Float64frombits(sigmaBits)
	at = r.pos
	td := r.uvarint("D")
	at2 := r.pos
	// Nothing is allocated by P itself: the kept section reads P/8 bytes
	// of bitmap or one byte per column, each checked against what is left.
	minP := 1
	if v2 {
		minP = 0
	}
	tr.P = r.count("P", minP, inference.MaxP, 0)
	switch {
	case r.err != nil:
	case tr.P == 0:
		// Format 2 on: threshold and tree bits alone, no random features.
		switch {
		case nt == 0 && trees == nil:
			r.fail(ErrInvalid, at2, "p = 0 and no thresholds or trees: the model has no features")
		case proj != nil:
			r.fail(ErrInvalid, at2, "p = 0 with a projection: the projection would feed nothing")
		case gen != 0 || tr.Seed != 0 || sigmaBits != 0 || td != 0:
			r.fail(ErrInvalid, start, "p = 0 but generator %d, seed %d, σ %g, D %d: each must be 0", gen, tr.Seed, tr.Sigma, td)
		}
	default:
		want, of := uint64(d), "compat section"
		if proj != nil {
			want, of = uint64(proj.Out()), "projection's output count"
		}
		if td != want {
			r.fail(ErrInvalid, at, "transform has D = %d, the %s is %d", td, of, want)
			break
		}
		tr.D = int(td)
		if err := tr.Validate(); err != nil {
			r.err = &FormatError{Section: r.section, Offset: start, Err: ErrInvalid, Cause: err}
		}
	}
	end()

	begin("kept")
	na := nt + trees.Columns() // the axis-aligned columns, weighed by ρ (tree plane b by ρ·2^b)
	cols := na + tr.P
	kept, form := r.kept(cols, v2)
	l.keptForm = form
	if r.err == nil && v2 {
		if want := keptForm(kept, cols, 2); l.keptForm != want {
			r.fail(ErrInvalid, start, "kept columns as %s, but the %s is smaller or as small", keptFormName(l.keptForm), keptFormName(want))
		}
	}
	end()

	begin("weights")
	nv := inference.Vectors(nc)
	k, words, nb := len(kept), (len(kept)+63)/64, (len(kept)+7)/8
	if r.err == nil && nv > r.left()/(1+nb) {
		r.fail(ErrTruncated, r.pos, "%d weight vectors need at least %d bytes, %d left", nv, nv*(1+nb), r.left())
	}
	if r.err != nil {
		nv = 0 // allocate nothing more for a bundle already refused
	}
	sign, nz := make([][]uint64, 0, nv), make([][]uint64, 0, nv)
	for c := 0; c < nv && r.err == nil; c++ {
		s, z, form := r.packed("vector "+strconv.Itoa(c), k, words, format)
		sign, nz = append(sign, s), append(nz, z)
		l.vectorForms = append(l.vectorForms, form)
	}
	end()

	begin("alpha")
	alpha := make([]float32, 0, nv)
	for c := 0; c < nv && r.err == nil; c++ {
		at := r.pos
		a := r.f32("α")
		if r.err == nil && (!(a > 0) || a-a != 0) {
			r.fail(ErrInvalid, at, "vector %d has α = %g, want finite and positive", c, a)
		}
		alpha = append(alpha, a)
	}
	end()

	begin("selftest")
	b.SelfTest.Class = r.count("self-test class", 0, nc-1, 0)
	b.SelfTest.Scores = make([]int32, 0, nv)
	// |wᵀz| is at most the sum of the kept columns' multipliers: 1 for a
	// random feature, ρ for a threshold or a tree column of plane 0, and
	// ρ·2^b for one of tree plane b. Capped at the int32 the score is.
	limit := int64(k)
	if nl, w := trees.Leaves(), max(int64(rho), 1); (w > 1 || trees.NumPlanes() > 1) && r.err == nil {
		for _, j := range kept {
			if int(j) >= na {
				break
			}
			m := w
			if int(j) >= nt {
				m <<= (int(j) - nt) / nl
			}
			limit += m - 1
		}
	}
	// The scores include the calibration offsets, which come later: each
	// is checked against the limit plus its vector's offset once the
	// calibration section is read. Until then a score must fit the widest
	// that allows, which keeps it an int32.
	scoresAt := make([]int, 0, nv)
	for c := 0; c < nv && r.err == nil; c++ {
		at := r.pos
		scoresAt = append(scoresAt, at)
		s := r.varint("self-test score")
		if wide := min(limit+inference.MaxOffset, math.MaxInt32); r.err == nil && (s < -wide || s > wide) {
			r.fail(ErrInvalid, at, "vector %d: score %d outside ±%d", c, s, wide)
		}
		b.SelfTest.Scores = append(b.SelfTest.Scores, int32(s))
	}
	end()

	var fp *inference.Fingerprint
	var cal *inference.Calibration
	if v2 {
		begin("fingerprint")
		fp = r.fingerprint(k)
		end()
		if format >= calibrationFormat {
			begin("calibration")
			cal = r.calibration(d, inference.Vectors(len(classes)), fp != nil)
			end()
		}
		begin("info")
		b.Info = r.info()
		end()
	}

	if r.err == nil && r.left() != 0 {
		r.fail(ErrTrailing, r.pos, "%d bytes between the %s section and the trailer", r.left(), r.section)
	}
	if r.err == nil {
		r.section = "selftest"
		checkScores(r, b.SelfTest.Scores, scoresAt, limit, cal)
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	l.sections = append(l.sections, Section{Name: "signature", Offset: len(r.data), Size: trailerSize})

	b.KeyID, b.Signature, l.unsigned = trailer(data)
	b.Signed = !l.unsigned
	b.Spec = &inference.ModelSpec{
		Classes:         classes,
		Features:        b.Compat.Features,
		Scaler:          sc,
		Thresholds:      th,
		Trees:           trees,
		ThresholdWeight: rho,
		Projection:      proj,
		Transform:       tr,
		Kept:            kept,
		Sign:            sign,
		NonZero:         nz,
		Alpha:           alpha,
		Fingerprint:     fp,
		Calibration:     cal,
	}
	return b, l, nil
}

// checkScores checks the self-test scores, read at offsets at, against
// limit, the sum of the kept columns' multipliers, plus each vector's
// calibration offset (cal may be nil). Capped at the int32 a score is.
func checkScores(r *reader, scores []int32, at []int, limit int64, cal *inference.Calibration) {
	for c, s := range scores {
		lim := limit
		if cal != nil && cal.Offsets != nil {
			o := int64(cal.Offsets[c])
			lim += max(o, -o)
		}
		lim = min(lim, math.MaxInt32)
		if int64(s) < -lim || int64(s) > lim {
			r.fail(ErrInvalid, at[c], "vector %d: score %d outside ±%d", c, s, lim)
			return
		}
	}
}

// scaler reads the scaler section of a bundle with d features.
func (r *reader) scaler(d int, v2 bool, l *layout) inference.Scaler {
	var sc inference.Scaler
	at := r.pos
	l.scalerForm = r.u8("scaler form")
	width := 2
	switch {
	case r.err != nil:
		return sc
	case l.scalerForm == scalerFloat32:
		width = 4
	case l.scalerForm != scalerHalf:
		r.fail(ErrInvalid, at, "scaler form %d, want 0 (float16) or 1 (float32)", l.scalerForm)
		return sc
	}
	if v2 {
		at := r.pos
		flags := r.u8("scaler flags")
		if r.err == nil && flags&^scalerClip != 0 {
			r.fail(ErrInvalid, at, "unknown scaler flags %#x", flags)
		}
		sc.Clip = flags&scalerClip != 0
	}
	if r.err != nil {
		return sc
	}
	if 2*d*width > r.left() {
		r.fail(ErrTruncated, r.pos, "%d scaler values need %d bytes, %d left", 2*d, 2*d*width, r.left())
		return sc
	}
	sc.Lo, sc.Hi = make([]float32, d), make([]float32, d)
	for _, vs := range [][]float32{sc.Lo, sc.Hi} {
		for i := range vs {
			if width == 2 {
				vs[i] = halfToFloat32(r.u16("scaler value"))
			} else {
				vs[i] = r.f32("scaler value")
			}
		}
	}
	if err := checkScaler(sc, d); err != nil {
		r.fail(ErrInvalid, at, "%v", err)
	}
	// float32 is only for scalers float16 cannot hold: one form per scaler,
	// and whatever decodes re-encodes.
	if width == 4 && halfRange(sc.Lo) && halfRange(sc.Hi) {
		r.fail(ErrInvalid, at, "float32 scaler with every value within ±%d: must be float16", MaxHalf)
	}
	return sc
}

// thresholds reads the thresholds section (format 2) of a bundle with d
// features and returns them (nil for none), their number and their weight
// ρ (0 for 1, the spec's canonical value).
func (r *reader) thresholds(d int, l *layout) ([][]float32, int, int32) {
	at := r.pos
	l.thresholdsForm = r.u8("thresholds form")
	switch {
	case r.err != nil:
		return nil, 0, 0
	case l.thresholdsForm == thresholdsNone:
		return nil, 0, 0
	case l.thresholdsForm != thresholdsHalf:
		r.fail(ErrInvalid, at, "thresholds form %d, want 0 (none) or 1 (float16)", l.thresholdsForm)
		return nil, 0, 0
	}
	wat := r.pos
	rho := r.uvarint("threshold weight")
	switch {
	case r.err != nil:
		return nil, 0, 0
	case rho < 1 || rho > inference.MaxThresholdWeight:
		r.fail(ErrInvalid, wat, "threshold weight %d, want 1..%d", rho, inference.MaxThresholdWeight)
		return nil, 0, 0
	case d > r.left():
		r.fail(ErrTruncated, r.pos, "%d threshold counts need %d bytes, %d left", d, d, r.left())
		return nil, 0, 0
	}
	weight := int32(rho)
	if weight == 1 {
		weight = 0
	}
	th := make([][]float32, d)
	total := 0
	for i := 0; i < d && r.err == nil; i++ {
		at := r.pos
		n := r.count("threshold count", 0, inference.MaxThresholds, 2)
		if r.err != nil {
			break
		}
		if total += n; total > inference.MaxThresholds {
			r.fail(ErrInvalid, at, "more than %d thresholds", inference.MaxThresholds)
			break
		}
		if n == 0 {
			continue
		}
		list := make([]float32, n)
		for k := range list {
			at := r.pos
			v := halfToFloat32(r.u16("threshold"))
			if err := checkThresholdValue(v); err != nil {
				r.fail(ErrInvalid, at, "feature %d threshold %d: %v", i, k, err)
				break
			}
			if k > 0 && !(v > list[k-1]) {
				r.fail(ErrInvalid, at, "feature %d threshold %d: %g is not above the previous %g", i, k, v, list[k-1])
				break
			}
			list[k] = v
		}
		th[i] = list
	}
	if r.err == nil && total == 0 {
		r.fail(ErrInvalid, at, "thresholds form 1 without a threshold: write form 0 (none)")
	}
	if r.err != nil {
		return nil, 0, 0
	}
	return th, total, weight
}

// fingerprint reads the fingerprint section (format 2) of a model with k
// kept columns; nil means none.
func (r *reader) fingerprint(k int) *inference.Fingerprint {
	n := r.count("fingerprint columns", 0, min(k, inference.MaxFingerprint), 2)
	if r.err != nil || n == 0 {
		return nil
	}
	fp := &inference.Fingerprint{Columns: make([]int32, 0, n)}
	prev := int64(-1)
	for range n {
		at := r.pos
		gap := r.uvarint("fingerprint gap")
		if r.err != nil {
			return nil
		}
		if gap == 0 || gap > uint64(k) || prev+int64(gap) >= int64(k) {
			r.fail(ErrInvalid, at, "gap %d after column %d: columns must ascend below the %d kept columns", gap, prev, k)
			return nil
		}
		prev += int64(gap)
		fp.Columns = append(fp.Columns, int32(prev))
	}
	raw := r.take(n, "fingerprint rates")
	if r.err != nil {
		return nil
	}
	fp.Rates = append([]uint8(nil), raw...)
	return fp
}

// projection reads the projection section (format 2) of a bundle with d
// features; nil means none.
func (r *reader) projection(d int, format byte, l *layout) *inference.Projection {
	at := r.pos
	form := r.u8("projection form")
	switch {
	case r.err != nil || form == projectionNone:
		return nil
	case form != projectionPresent:
		r.fail(ErrInvalid, at, "projection form %d, want 0 (none) or 1 (present)", form)
		return nil
	}
	words, nb := (d+63)/64, (d+7)/8
	// Each output takes a flags byte, at least ⌈d/8⌉ bytes of coefficients,
	// and its scale and bias.
	out := r.count("projection outputs", 1, inference.MaxProjectionOut, 9+nb)
	if r.err != nil {
		return nil
	}
	p := &inference.Projection{
		Sign: make([][]uint64, 0, out), NonZero: make([][]uint64, 0, out),
		Scale: make([]float32, 0, out), Bias: make([]float32, 0, out),
	}
	for o := 0; o < out && r.err == nil; o++ {
		s, z, form := r.packed("projection output "+strconv.Itoa(o), d, words, format)
		at := r.pos
		scale, bias := r.f32("projection scale"), r.f32("projection bias")
		if r.err == nil && (scale-scale != 0 || bias-bias != 0) {
			r.fail(ErrInvalid, at, "projection output %d has scale %g, bias %g: want finite values", o, scale, bias)
		}
		p.Sign, p.NonZero = append(p.Sign, s), append(p.NonZero, z)
		p.Scale, p.Bias = append(p.Scale, scale), append(p.Bias, bias)
		l.projectionForms = append(l.projectionForms, form)
	}
	if r.err != nil {
		return nil
	}
	return p
}

// info reads the info section (format 2): nil for no pairs.
func (r *reader) info() map[string]string {
	// Each pair takes at least a key length, one key byte and a value
	// length.
	n := r.count("info pairs", 0, MaxInfoPairs, 3)
	if r.err != nil || n == 0 {
		return nil
	}
	info := make(map[string]string, n)
	prev := ""
	for i := 0; i < n && r.err == nil; i++ {
		at := r.pos
		key := r.str("info key", MaxInfoKey, false)
		if r.err != nil {
			break
		}
		if err := checkInfoKey(key); err != nil {
			r.fail(ErrInvalid, at, "info pair %d: %v", i, err)
			break
		}
		if i > 0 && key <= prev {
			r.fail(ErrInvalid, at, "info key %q after %q: keys must ascend", key, prev)
			break
		}
		info[key] = r.str("info value", MaxInfoValue, true)
		prev = key
	}
	return info
}

func keptFormName(form byte) string {
	switch form {
	case keptDeltas:
		return "gap list"
	case keptAll:
		return "all-columns form"
	}
	return "bitmap"
}

// kept reads the kept-column section for an embedding of p columns and
// returns the columns and the form they were in. The all-columns form
// exists from format 2 on.
func (r *reader) kept(p int, v2 bool) ([]int32, byte) {
	at := r.pos
	form := r.u8("kept form")
	if r.err != nil {
		return nil, form
	}
	switch {
	case form == keptAll && v2:
		// Every weight vector then takes at least p/8 bytes: refuse a
		// p the rest cannot hold before allocating for it.
		if (p+7)/8 > r.left() {
			r.fail(ErrTruncated, at, "all %d columns kept: their weights need at least %d bytes, %d left", p, (p+7)/8, r.left())
			return nil, form
		}
		kept := make([]int32, p)
		for i := range kept {
			kept[i] = int32(i)
		}
		return kept, form
	case form == keptBitmap:
		bm := r.take((p+7)/8, "kept-column bitmap")
		if r.err != nil {
			return nil, form
		}
		if p%8 != 0 && bm[len(bm)-1]>>(p%8) != 0 {
			r.fail(ErrInvalid, r.pos-1, "bitmap has bits set past column %d", p-1)
			return nil, form
		}
		n := 0
		for _, v := range bm {
			n += bits.OnesCount8(v)
		}
		kept := make([]int32, 0, n)
		for i, v := range bm {
			for ; v != 0; v &= v - 1 {
				kept = append(kept, int32(i*8+bits.TrailingZeros8(v)))
			}
		}
		return kept, form
	case form == keptDeltas:
		n := r.count("kept-column count", 0, p, 1)
		if r.err != nil {
			return nil, form
		}
		kept := make([]int32, 0, n)
		prev := int64(-1)
		for range n {
			at := r.pos
			delta := r.uvarint("kept-column gap")
			if r.err != nil {
				return nil, form
			}
			if delta == 0 || delta > uint64(p) || prev+int64(delta) >= int64(p) {
				r.fail(ErrInvalid, at, "gap %d after column %d: columns must ascend below p = %d", delta, prev, p)
				return nil, form
			}
			prev += int64(delta)
			kept = append(kept, int32(prev))
		}
		return kept, form
	}
	if v2 {
		r.fail(ErrInvalid, at, "kept form %d, want 0 (bitmap), 1 (deltas) or 2 (all)", form)
	} else {
		r.fail(ErrInvalid, at, "kept form %d, want 0 (bitmap) or 1 (deltas)", form)
	}
	return nil, form
}

// plane reads an nb-byte bit plane over k columns into words of 64 bits.
// Bits past k must be zero.
func (r *reader) plane(what string, k, words, nb int) []uint64 {
	raw := r.take(nb, what)
	if r.err != nil {
		return nil
	}
	if k%8 != 0 && raw[nb-1]>>(k%8) != 0 {
		r.fail(ErrInvalid, r.pos-1, "%s has bits set past the last kept column", what)
		return nil
	}
	out := make([]uint64, words)
	for i, v := range raw {
		out[i/8] |= uint64(v) << (8 * (i % 8))
	}
	return out
}

// onesPlane returns a plane with the first k bits set.
func onesPlane(k, words int) []uint64 {
	out := make([]uint64, words)
	for i := range out {
		out[i] = ^uint64(0)
	}
	if tail := k % 64; tail != 0 {
		out[words-1] = 1<<tail - 1
	}
	return out
}
