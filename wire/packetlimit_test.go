package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
)

// chunkConn is a net.Conn that reads src in chunks of at most chunk bytes
// and counts what was read.
type chunkConn struct {
	net.Conn // nil: only Read and Close are used
	src      []byte
	chunk    int
	read     int
	closed   bool
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if c.read == len(c.src) {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.chunk)], c.src[c.read:])
	c.read += n
	return n, nil
}

func (c *chunkConn) Close() error { c.closed = true; return nil }

// packet returns the fixed header of an MQTT control packet (a PUBLISH)
// whose body is n bytes.
func packet(n int) []byte {
	p := []byte{0x30}
	for {
		b := byte(n & 0x7f)
		n >>= 7
		if n > 0 {
			b |= 0x80
		}
		p = append(p, b)
		if n == 0 {
			break
		}
	}
	return p
}

// withBody is packet(n) followed by its n body bytes.
func withBody(n int) []byte { return append(packet(n), bytes.Repeat([]byte{'x'}, n)...) }

func readAll(c net.Conn, bufSize int) ([]byte, error) {
	var out []byte
	buf := make([]byte, bufSize)
	for {
		n, err := c.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return out, err
		}
	}
}

func TestLimitPacketsPassesSmallPackets(t *testing.T) {
	const max = 300
	var stream []byte
	for _, n := range []int{0, 1, 127, 128, 200, max - 3} { // max-3: 1+2 header bytes, exactly max
		stream = append(stream, withBody(n)...)
	}
	for _, chunk := range []int{1, 2, 3, 7, 1000} {
		for _, buf := range []int{1, 5, 4096} {
			src := &chunkConn{src: stream, chunk: chunk}
			got, err := readAll(LimitPackets(src, max), buf)
			if err != io.EOF {
				t.Fatalf("chunk %d, buffer %d: %v, want EOF", chunk, buf, err)
			}
			if !bytes.Equal(got, stream) {
				t.Fatalf("chunk %d, buffer %d: bytes changed in transit", chunk, buf)
			}
		}
	}
}

// TestLimitPacketsRefusesLargePacket: the packet one byte over the limit
// fails as soon as its length is known; with one-byte reads nothing of its
// body has been read from the network, and what came before it was passed
// on whole.
func TestLimitPacketsRefusesLargePacket(t *testing.T) {
	const max = 300
	before := append(withBody(10), withBody(max-3)...)
	big := withBody(max - 2) // 1 + 2 + 298 = 301 bytes
	stream := append(append([]byte(nil), before...), big...)
	for _, chunk := range []int{1, 4, 1000} {
		src := &chunkConn{src: stream, chunk: chunk}
		c := LimitPackets(src, max)
		got, err := readAll(c, 64)
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("chunk %d: %v, want ErrTooLarge", chunk, err)
		}
		// Everything before the big packet's last length byte was passed on.
		if want := stream[:len(before)+2]; !bytes.Equal(got, want) {
			t.Fatalf("chunk %d: passed on %d bytes, want %d", chunk, len(got), len(want))
		}
		if chunk == 1 && src.read != len(before)+3 {
			t.Errorf("read %d bytes from the network, want %d (none of the big body)", src.read, len(before)+3)
		}
		if !src.closed {
			t.Error("connection not closed")
		}
		if _, err2 := c.Read(make([]byte, 10)); !errors.Is(err2, ErrTooLarge) {
			t.Errorf("Read after the error: %v", err2)
		}
	}
}

func TestLimitPacketsHugeAndMalformedLengths(t *testing.T) {
	for _, c := range []struct {
		name   string
		stream []byte
		want   error
	}{
		{"256 MB", []byte{0x30, 0xff, 0xff, 0xff, 0x7f}, ErrTooLarge},
		{"10 MB", packet(10 << 20), ErrTooLarge},
		{"five length bytes", []byte{0x30, 0x80, 0x80, 0x80, 0x80, 0x01}, ErrMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := readAll(LimitPackets(&chunkConn{src: c.stream, chunk: 1}, 64*1024), 1)
			if !errors.Is(err, c.want) {
				t.Fatalf("%v, want %v", err, c.want)
			}
		})
	}
}

// FuzzLimitPackets compares LimitPackets, whatever the chunking of the
// stream, with the reference walk over the whole stream below.
func FuzzLimitPackets(f *testing.F) {
	f.Add(append(withBody(5), withBody(70)...), uint8(1), uint16(64))
	f.Add([]byte{0x30, 0xff, 0xff, 0xff, 0xff, 0x01}, uint8(3), uint16(100))
	f.Add(withBody(200), uint8(7), uint16(100))
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8, max uint16) {
		// Reference: walk the packets; stop at the first refused one.
		pass, wantErr := len(stream), error(nil)
	walk:
		for i := 0; i < len(stream); {
			i++ // type byte
			val := 0
			for n := 0; ; n++ {
				if i >= len(stream) {
					break walk
				}
				v := stream[i]
				val |= int(v&0x7f) << (7 * n)
				if v&0x80 != 0 {
					if n == 3 {
						pass, wantErr = i, ErrMalformed
						break walk
					}
					i++
					continue
				}
				if 1+n+1+val > int(max) {
					pass, wantErr = i, ErrTooLarge
					break walk
				}
				i += 1 + val
				break
			}
		}
		src := &chunkConn{src: stream, chunk: int(chunk%16) + 1}
		got, err := readAll(LimitPackets(src, int(max)), 32)
		if wantErr == nil {
			if err != io.EOF {
				t.Fatalf("error %v, want EOF", err)
			}
		} else if !errors.Is(err, wantErr) {
			t.Fatalf("error %v, want %v", err, wantErr)
		}
		if !bytes.Equal(got, stream[:pass]) {
			t.Fatalf("passed on %d bytes, want %d", len(got), pass)
		}
	})
}

// TestCheckBrokerHostPort: the one rule for a broker address, which the
// agent's and trit-fleet's configurations share: a host and a port.
func TestCheckBrokerHostPort(t *testing.T) {
	for _, ok := range []string{"tcp://127.0.0.1:1883", "tls://broker.example:8883", "mqtts://[::1]:8883", "ssl://node-2.example:8883"} {
		if err := CheckBrokerHostPort(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"tcp://127.0.0.1", "tls://broker.example", "tcp://:1883", "tcp://", "127.0.0.1:1883", "tcp://host:port", "", "tcp://[::1]"} {
		err := CheckBrokerHostPort(bad)
		if want := fmt.Sprintf("%q: want scheme://host:port, e.g. tls://broker.example:8883 or tcp://127.0.0.1:1883", bad); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %s", bad, err, want)
		}
	}
}

// TestLimitPacketsWriteSaysWhy: once a packet over the limit has closed
// the connection, a write fails with that reason, not with the closed
// connection's (paho reports whichever of its reader's and writer's
// errors comes first: TestPahoPacketLimit saw "use of closed network
// connection"); a write that fails for any other reason says its own.
func TestLimitPacketsWriteSaysWhy(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := LimitPackets(a, 300)
	go b.Write(withBody(400))
	if _, err := readAll(c, 64); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("read: %v, want ErrTooLarge", err)
	}
	if _, err := c.Write([]byte{0x40, 2, 0, 1}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("write after the limit: %v, want ErrTooLarge", err)
	}

	x, y := net.Pipe()
	y.Close()
	if _, err := LimitPackets(x, 300).Write([]byte{0xc0, 0}); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("write to a closed pipe: %v, want its own error", err)
	}
}
