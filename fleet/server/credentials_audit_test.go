package server

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/trit-iot/trit/store"
)

// A change to the credentials file, taken up by the broker at its next
// check, is told once — added, removed and replaced devices — and written
// to the audit trail one record per device.
func TestCredentialsChangesAudited(t *testing.T) {
	path := filepath.Join(t.TempDir(), "creds")
	_, h1, _ := newSecret()
	_, h2, _ := newSecret()
	_, h3, _ := newSecret()
	if err := writeCredentials(path, credentials{"gw-1": h1, "gw-2": h2}); err != nil {
		t.Fatal(err)
	}
	var got []CredentialsChange
	s, err := openCredentials(path, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	s.onChange = func(c CredentialsChange) { got = append(got, c) }
	s.check("gw-1", nil)
	if len(got) != 0 {
		t.Fatalf("an unchanged file reported a change: %+v", got)
	}
	if err := writeCredentials(path, credentials{"gw-1": h3, "gw-3": h2}); err != nil {
		t.Fatal(err)
	}
	s.check("gw-1", nil)
	s.check("gw-1", nil)
	if len(got) != 1 || !slices.Equal(got[0].Added, []string{"gw-3"}) || !slices.Equal(got[0].Removed, []string{"gw-2"}) ||
		!slices.Equal(got[0].Replaced, []string{"gw-1"}) || got[0].File != path || got[0].Owner == "" {
		t.Fatalf("changes: %+v", got)
	}
	f := newFixture(t)
	recordCredentials(f.svc.Audit(), got[0])
	recs, err := auditOf(f.db, store.AuditQuery{Action: "credentials"})
	if err != nil || len(recs) != 3 {
		t.Fatalf("audit: %+v %v", recs, err)
	}
	var seen []string
	for _, r := range recs {
		seen = append(seen, r.Action+" "+r.Object)
		if r.Who != "credentials-file" || r.Outcome != store.AuditOK {
			t.Errorf("record %+v", r)
		}
	}
	if want := []string{"credentials.add device/gw-3", "credentials.remove device/gw-2", "credentials.replace device/gw-1"}; !slices.Equal(seen, want) {
		t.Fatalf("records %v, want %v", seen, want)
	}
}
