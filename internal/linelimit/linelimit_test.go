package linelimit

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

var errLong = errors.New("long")

func TestReader(t *testing.T) {
	tooLong := func(n int) error { return fmt.Errorf("line %d: %w", n, errLong) }
	for _, tt := range []struct {
		in, want string
		line     int // of the error; 0: none
	}{
		{"ab\ncd\n", "ab\ncd\n", 0},
		{"abcd\nef", "abcd\nef", 0},
		{"ab\nabcde\nx\n", "ab\n", 2},
		{"abcdef", "", 1},
	} {
		// One byte at a time too: a line split across reads still counts whole.
		for _, one := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tt.in)
			if one {
				r = iotest.OneByteReader(r)
			}
			got, err := io.ReadAll(&Reader{R: r, Max: 4, TooLong: tooLong})
			// The lines before a long one come whole; read in small pieces,
			// the start of the long line (at most Max bytes) may come too.
			if !strings.HasPrefix(string(got), tt.want) || !strings.HasPrefix(tt.in, string(got)) || len(got) > len(tt.want)+4 {
				t.Errorf("%q (one byte %v): read %q, want %q", tt.in, one, got, tt.want)
			}
			switch {
			case tt.line == 0 && err != nil, tt.line > 0 && (!errors.Is(err, errLong) || !strings.Contains(err.Error(), fmt.Sprintf("line %d:", tt.line))):
				t.Errorf("%q (one byte %v): error %v, want line %d", tt.in, one, err, tt.line)
			}
		}
	}
	// Lines numbered from an offset.
	_, err := io.ReadAll(&Reader{R: strings.NewReader("abcdef\n"), Max: 4, TooLong: tooLong, Line: 10})
	if err == nil || !strings.Contains(err.Error(), "line 11:") {
		t.Errorf("offset: %v", err)
	}
}
