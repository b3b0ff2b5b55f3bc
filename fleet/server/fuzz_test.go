package server

import (
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"

	"github.com/trit-iot/trit/internal/capped/cappedtest"
	"github.com/trit-iot/trit/store"
)

// Fuzz targets for what trit-fleet reads from its configuration, the
// files it names, and the headers of requests through a trusted proxy.

// FuzzTrustedProxies: api.trusted_proxies (one entry a line) either
// parses into one valid prefix an entry, each trusting the address it
// names, or is refused naming the entry; and X-Forwarded-For from a peer
// gives a client only when the peer is trusted, one of the addresses the
// header names.
func FuzzTrustedProxies(f *testing.F) {
	for _, s := range []struct{ list, peer, xff string }{
		{"127.0.0.1\n10.0.0.0/8", "10.1.2.3:4000", "198.51.100.7, 10.1.2.3"},
		{"::1\n2001:db8::/32", "[2001:db8::5]:443", "2001:db8::1, [2001:db8::9]:80"},
		{"::ffff:10.0.0.5", "10.0.0.5:80", "198.51.100.7"},
		{"::ffff:10.0.0.0/104", "10.0.0.5:80", "198.51.100.7"},
		{"10.0.0.7/8", "10.0.0.5:80", "garbage, 198.51.100.7, 10.0.0.9"},
		{"fe80::1%eth0", "[fe80::1]:80", "fe80::2%eth0"},
		{"proxy.example", "10.0.0.5:80", ""},
		{" 10.0.0.1 \n", "10.0.0.1:1", "1.2.3.4:5,,"},
		{"0.0.0.0/0\n::/0", "192.0.2.1:1", "::ffff:192.0.2.9"},
		{"10.0.0.0/33", "x", "y"},
	} {
		f.Add(s.list, s.peer, s.xff)
	}
	f.Fuzz(func(t *testing.T, list, peer, xff string) {
		entries := strings.Split(list, "\n")
		nets, err := parseTrustedProxies(entries)
		if err != nil {
			named := false
			for _, e := range entries {
				named = named || strings.Contains(err.Error(), strconv.Quote(strings.TrimSpace(e)))
			}
			if !named {
				t.Fatalf("parseTrustedProxies(%q): error %q names no entry", entries, err)
			}
			return
		}
		if len(nets) != len(entries) {
			t.Fatalf("parseTrustedProxies(%q): %d prefixes", entries, len(nets))
		}
		for i, p := range nets {
			if !p.IsValid() || p != p.Masked() {
				t.Fatalf("entry %q: prefix %v", entries[i], p)
			}
			// What the entry names is trusted: its address, or its
			// prefix's first address.
			e := strings.TrimSpace(entries[i])
			var a netip.Addr
			if pp, err := netip.ParsePrefix(e); err == nil {
				a = pp.Masked().Addr()
			} else if a, err = netip.ParseAddr(e); err != nil {
				t.Fatalf("entry %q accepted: %v", e, err)
			}
			if !trusted(a, nets[i:i+1]) {
				t.Fatalf("entry %q gives %v, which does not trust %v", e, p, a)
			}
		}
		r := &http.Request{RemoteAddr: peer, Header: http.Header{}}
		for _, v := range strings.Split(xff, "\n") {
			r.Header.Add("X-Forwarded-For", v)
		}
		client, found := clientAddr(r, nets)
		if !found {
			return
		}
		if ap, err := netip.ParseAddrPort(peer); err != nil || !trusted(ap.Addr(), nets) {
			t.Fatalf("a client (%v) from peer %q, not a trusted proxy", client, peer)
		}
		if !client.IsValid() || client.Is4In6() {
			t.Fatalf("client %v", client)
		}
		if !strings.Contains(xff, strings.TrimPrefix(client.String(), "::ffff:")) &&
			!strings.Contains(strings.ToLower(xff), strings.ToLower(client.String())) {
			// Not spelled as in the header; it must still be one of them.
			for _, h := range strings.FieldsFunc(xff, func(r rune) bool { return r == ',' || r == '\n' }) {
				h = strings.TrimSpace(h)
				a, err := netip.ParseAddr(h)
				if err != nil {
					ap, _ := netip.ParseAddrPort(h)
					a = ap.Addr()
				}
				if a.Unmap() == client {
					return
				}
			}
			t.Fatalf("client %v is not in X-Forwarded-For %q", client, xff)
		}
	})
}

// FuzzReadCheckpoints: a --checkpoints file either gives the heads its
// lines hold, at most one a line, or is refused naming the file and the
// line.
func FuzzReadCheckpoints(f *testing.F) {
	head := `{"first":1,"next":9,"chain":1,"last":"` + strings.Repeat("ab", 32) + `","key":"` + strings.Repeat("cd", 32) +
		`","sig":"` + strings.Repeat("ef", 64) + `","signed":"2026-11-21T03:04:05Z"}`
	for _, seed := range []string{
		`{"head":` + head + "}\n" + `{"record":{"seq":1,"action":"publish"}}` + "\n" + `{"checkpoint":` + head + "}\n",
		head + "\n\n" + head + "\r\n",
		`{"head":{}}`, `{"first":1}`, `{"record":null}`, `[1]`, `{"head":{"first":"x"}}`, "{\"sig\":\"ab\"}\n{",
		`{"head":` + head + `,"checkpoint":` + head + `}`, "\n \t\n", "",
		head + "\n" + strings.Repeat("x", store.MaxAuditExportLine+1) + "\n",
	} {
		f.Add([]byte(seed))
	}
	path, file := fuzzFile(f, "checkpoints.jsonl")
	f.Fuzz(func(t *testing.T, data []byte) {
		rewrite(t, file, data)
		lines := strings.Split(string(data), "\n")
		heads, err := readCheckpoints(path)
		if err != nil {
			msg := err.Error()
			prefix := "--checkpoints " + path + " line "
			n, cerr := strconv.Atoi(strings.TrimPrefix(msg[:strings.IndexByte(msg+":", ':')], prefix))
			if !strings.HasPrefix(msg, prefix) || cerr != nil || n < 1 || n > len(lines) {
				t.Fatalf("error %q does not name the file and a line of its %d", msg, len(lines))
			}
			return
		}
		nonEmpty := 0
		for _, l := range lines {
			if strings.TrimSpace(l) != "" {
				nonEmpty++
			}
		}
		if len(heads) > nonEmpty {
			t.Fatalf("%d heads from %d lines", len(heads), nonEmpty)
		}
		for _, h := range heads {
			if _, err := json.Marshal(h); err != nil {
				t.Fatalf("head %+v does not encode: %v", h, err)
			}
		}
	})
}

// FuzzReadToken: api.token_file either gives a token, the file's text
// without the white space around it, that an HTTP client can send as a
// bearer token, or is refused naming the file; a file group or others may
// read is refused.
func FuzzReadToken(f *testing.F) {
	for _, seed := range []string{
		"0123456789abcdef0123456789abcdef\n", "c2VjcmV0LXNlY3JldC1zZWNyZXQK\r\n", "  spaced token inside  ",
		// base64 wraps at 76 characters: two lines, which no header carries.
		"8J+boPCfm7Dwn5uw8J+bsPCfm7Dwn5uw8J+bsPCfm7Dwn5uw8J+bsPCfm7Dwn5uw8J+bsPCfm7Dw\nn5uw8J+bsA==\n",
		"tab\tinside", "nul\x00inside", "del\x7f", "\xff\xfe", "", "\n",
	} {
		f.Add([]byte(seed), uint8(0))
	}
	f.Add([]byte("0123456789abcdef\n"), uint8(0o044))
	path, file := fuzzFile(f, "api-token")
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		perm := 0o600 | fs.FileMode(mode)&0o077
		rewrite(t, file, data)
		if err := file.Chmod(perm); err != nil {
			t.Fatal(err)
		}
		tok, err := readToken(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
			if perm&0o077 == 0 && strings.Contains(err.Error(), "chmod") {
				t.Fatalf("mode %04o refused: %v", perm, err)
			}
			return
		}
		if perm&0o077 != 0 && runtime.GOOS != "windows" {
			t.Fatalf("a token file of mode %04o accepted", perm)
		}
		if tok != strings.TrimSpace(string(data)) {
			t.Fatalf("token %q from %q", tok, data)
		}
		if !httpguts.ValidHeaderFieldValue("Bearer " + tok) {
			t.Fatalf("token %q cannot be sent in an Authorization header", tok)
		}
	})
}

// fuzzFile creates the file name in a temporary directory for a fuzz
// target to rewrite each input into (rewrite).
func fuzzFile(f *testing.F, name string) (string, *os.File) {
	path := filepath.Join(f.TempDir(), name)
	file, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { file.Close() })
	return path, file
}

// rewrite makes data file's contents: written in place and cut to its
// length, 100 times faster than os.WriteFile's truncation to nothing
// first on ext4, which flushes the file when it is closed.
func rewrite(t *testing.T, file *os.File, data []byte) {
	t.Helper()
	if _, err := file.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if err := file.Truncate(int64(len(data))); err != nil {
		t.Fatal(err)
	}
}

// A token file of two lines (base64 wraps at 76 characters) is refused at
// start, naming the file: no HTTP client could send that token.
func TestReadTokenOneLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "api-token")
	if err := os.WriteFile(path, []byte("8J+boPCfm7Dwn5uw8J+bsPCfm7Dwn5uw8J+bsPCfm7Dwn5uw8J+bsPCfm7Dwn5uw8J+bsPCfm7Dw\nn5uw8J+bsA==\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := readToken(path)
	if want := path + ": the token has a line break or another control character at byte 76; the token is one line"; err == nil || err.Error() != want {
		t.Fatalf("readToken = %v, want %s", err, want)
	}
}

// An IPv4-mapped prefix trusts the IPv4 proxies it covers (it was
// accepted and trusted nobody); a zoned address is refused, naming it:
// peers are compared without their zone, and one interface's fe80::1
// cannot be told from another's. fe80::1 without a zone trusts that
// address on every interface.
func TestTrustedProxiesMappedAndZoned(t *testing.T) {
	if _, err := parseTrustedProxies([]string{"fe80::1%eth0"}); err == nil || !strings.Contains(err.Error(), `"fe80::1%eth0" names a zone`) {
		t.Fatalf("zoned entry: %v, want refused naming it", err)
	}
	nets, err := parseTrustedProxies([]string{"::ffff:10.0.0.0/104", "fe80::1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, peer := range []string{"10.1.2.3:80", "[::ffff:10.1.2.3]:80", "[fe80::1%eth0]:80"} {
		r := &http.Request{RemoteAddr: peer, Header: http.Header{"X-Forwarded-For": {"198.51.100.7"}}}
		if a, ok := clientAddr(r, nets); !ok || a != netip.MustParseAddr("198.51.100.7") {
			t.Errorf("peer %s: client %v, %v; want 198.51.100.7", peer, a, ok)
		}
	}
}

// TestReadTokenBounded: the API token file is read up to maxTokenFile
// bytes and no further. A token followed by more than that (blank lines,
// or a wrong path whose content never ends) was read whole and the token
// accepted; now it is refused naming the file and the bound. A file of
// maxTokenFile bytes is read, and so is a token through a pipe.
func TestReadTokenBounded(t *testing.T) {
	dir := t.TempDir()
	token := "0123456789abcdef0123456789abcdef"
	write := func(name string, n int) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(token+strings.Repeat("\n", n-len(token))), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	refused := func(path string, err error) {
		t.Helper()
		if want := path + ": larger than 65536 bytes (64 KiB), the most an API token file may hold; the token is one line"; err == nil || err.Error() != want {
			t.Fatalf("readToken = %v, want %s", err, want)
		}
	}
	big := write("big", maxTokenFile+1)
	_, err := readToken(big)
	refused(big, err)
	if tok, err := readToken(write("full", maxTokenFile)); err != nil || tok != token {
		t.Fatalf("a token file of maxTokenFile bytes: %q, %v", tok, err)
	}
	if !cappedtest.Pipes() {
		return // pipes by path: Linux
	}
	path := cappedtest.Pipe(t, func(w io.Writer) { io.WriteString(w, token+"\n") })
	if tok, err := readToken(path); err != nil || tok != token {
		t.Errorf("a token through a pipe: %q, %v", tok, err)
	}
	// Without end, as /dev/zero (which its mode 0666 refuses first).
	path = cappedtest.Pipe(t, cappedtest.Endless)
	_, err = readToken(path)
	refused(path, err)
}
