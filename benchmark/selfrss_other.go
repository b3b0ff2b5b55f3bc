//go:build !unix

package benchmark

// selfMaxRSS is not measured on this platform.
func selfMaxRSS() int64 { return 0 }
