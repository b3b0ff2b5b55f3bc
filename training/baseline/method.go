package baseline

import (
	"errors"
	"fmt"
	"strings"
)

// Method is one of the compared methods.
type Method int

// The methods, in the order of the paper's table.
const (
	RFE Method = iota
	Fastfood
	BJLE
	BCSIK
	TritFull
	TritTernary
)

// Methods returns every method in table order.
func Methods() []Method {
	return []Method{RFE, Fastfood, BJLE, BCSIK, TritFull, TritTernary}
}

var methodNames = [...]string{"rfe", "fastfood", "bjle", "bcsik", "trit-full", "trit-ternary"}

// String returns the method's name as ParseMethod accepts it.
func (m Method) String() string {
	if m >= 0 && int(m) < len(methodNames) {
		return methodNames[m]
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// ErrMethod reports an unknown method name.
var ErrMethod = errors.New("baseline: unknown method")

// ParseMethod returns the method named s (case-insensitive).
func ParseMethod(s string) (Method, error) {
	for i, n := range methodNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return Method(i), nil
		}
	}
	return 0, fmt.Errorf("%w %q (want one of %s)", ErrMethod, s, strings.Join(methodNames[:], ", "))
}

// denseR reports whether the method stores a dense d×p Gaussian matrix.
func (m Method) denseR() bool { return m == RFE || m == BJLE || m == BCSIK }

// binaryEmbedding reports whether the embedding is one bit per column.
func (m Method) binaryEmbedding() bool { return m != RFE && m != Fastfood }

// Memory is the inference memory of a model in the paper's accounting
// (Table 1 of Lei & Lan), in bytes.
type Memory struct {
	Transformation int64 `json:"transformation"`
	Embedding      int64 `json:"embedding"`
	Classifier     int64 `json:"classifier"`
}

// Total returns the sum of the three parts.
func (m Memory) Total() int64 { return m.Transformation + m.Embedding + m.Classifier }

// PaperMemory returns the memory of method m for d input features, p
// embedding columns and c weight vectors, per the paper's Table 1:
//
//	transformation: d·p·32 bits with a dense R (RFE, BJLE, BCSIK);
//	                5·p·32 bits with Fastfood (S, G, Π as 32-bit values,
//	                b and t; B's p bits rounded into the 5)
//	embedding:      p·32 bits for real features (RFE, Fastfood), p bits
//	                for binary ones
//	classifier:     c·p·32 bits full precision, c·p bits ternary (the
//	                paper's count; a ternary value really needs two bit
//	                planes over the kept columns — see the bundle size)
//
// d is the input dimension before Fastfood's zero-padding, as in the paper.
func PaperMemory(m Method, d, p, c int) Memory {
	D, P, C := int64(d), int64(p), int64(c)
	var mem Memory
	if m.denseR() {
		mem.Transformation = D * P * 4
	} else {
		mem.Transformation = 5 * P * 4
	}
	if m.binaryEmbedding() {
		mem.Embedding = (P + 7) / 8
	} else {
		mem.Embedding = P * 4
	}
	if m == TritTernary {
		mem.Classifier = (C*P + 7) / 8
	} else {
		mem.Classifier = C * P * 4
	}
	return mem
}
