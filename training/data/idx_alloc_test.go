package data

import (
	"encoding/binary"
	"path/filepath"
	"runtime"
	"testing"
)

// TestIDXAllocFollowsData: what readIDX allocates is backed by bytes it has
// read, whatever the header says. A 16-byte images file declaring no
// images of 16384×16384 pixels (n × rows × cols = 0, under the cap, and
// the size the header implies) made it allocate a 256 MiB row buffer
// before finding there was nothing to read; so did a compressed file
// declaring one such image and ending after its header.
func TestIDXAllocFollowsData(t *testing.T) {
	header := func(n, rows, cols uint32) []byte {
		b := binary.BigEndian.AppendUint32(nil, idxImagesMagic)
		for _, v := range []uint32{n, rows, cols} {
			b = binary.BigEndian.AppendUint32(b, v)
		}
		return b
	}
	for _, c := range []struct {
		name   string
		images []byte
		labels []byte
		gz     bool
		msg    string
	}{
		{"no images of 16384×16384", header(0, 1<<14, 1<<14), idxLabels(), false, "no data rows"},
		{"no images of 16384×16384 gz", header(0, 1<<14, 1<<14), idxLabels(), true, "no data rows"},
		{"one image of 16384×16384, header only, gz", header(1, 1<<14, 1<<14), idxLabels(1), true, "image 1 of 1: unexpected EOF"},
		{"one image of 16384×16384, 100 KiB of it, gz", append(header(1, 1<<14, 1<<14), make([]byte, 100<<10)...), idxLabels(1), true, "image 1 of 1: unexpected EOF"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// What loading a file of three 2×2 images allocates (readers,
			// decompressors) is the constant; then twice the pixels read
			// as float32 (the matrix grows by doubling) and 1 MiB.
			_, base, err := loadAllocs(writeIDX(t, idxImages(3, 2, 2), idxLabels(1, 2, 3), c.gz))
			if err != nil {
				t.Fatal(err)
			}
			p := writeIDX(t, c.images, c.labels, c.gz)
			_, got, err := loadAllocs(p)
			wantParseError(t, err, filepath.Base(p), 0, c.msg)
			if bound := base + uint64(8*len(c.images)) + 1<<20; got > bound {
				t.Fatalf("Load allocated %d bytes for %d bytes of images, bound %d", got, len(c.images), bound)
			}
		})
	}
}

// loadAllocs loads path and returns what Load allocated, in bytes.
func loadAllocs(path string) (*Dataset, uint64, error) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d, err := Load(path, nil)
	runtime.ReadMemStats(&after)
	return d, after.TotalAlloc - before.TotalAlloc, err
}
