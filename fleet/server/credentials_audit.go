package server

import (
	"os"
	"slices"
	"strconv"
	"syscall"

	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/store"
)

// The embedded broker's device credentials live in a file that `trit-fleet
// credentials` edits, not in the store, and the running service holds the
// store; so the audit trail records a change when the broker takes it up
// (it reads the file again at the next connection after the file changed):
// one record per device added, removed or given a new secret, by
// "credentials-file" (who edited the file is not known; its owner is in
// the detail).

// CredentialsChange is what one reload of the credentials file changed.
type CredentialsChange struct {
	File                     string
	Owner                    string // the file's owner, "uid N"; "" if unknown
	Added, Removed, Replaced []string
}

// changed reports the difference between old and new to onChange. Called
// with mu held.
func (s *credentialStore) changed(old, new credentials, fi os.FileInfo) {
	if s.onChange == nil {
		return
	}
	c := CredentialsChange{File: s.path}
	if fi != nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			c.Owner = "uid " + strconv.FormatUint(uint64(st.Uid), 10)
		}
	}
	for id, h := range new {
		switch oh, ok := old[id]; {
		case !ok:
			c.Added = append(c.Added, id)
		case oh != h:
			c.Replaced = append(c.Replaced, id)
		}
	}
	for id := range old {
		if _, ok := new[id]; !ok {
			c.Removed = append(c.Removed, id)
		}
	}
	if len(c.Added)+len(c.Removed)+len(c.Replaced) == 0 {
		return
	}
	for _, l := range [][]string{c.Added, c.Removed, c.Replaced} {
		slices.Sort(l)
	}
	s.onChange(c)
}

// maxCredentialRecords bounds the records one reload writes (a file of
// 150,000 new devices is one summary record instead).
const maxCredentialRecords = 1000

// recordCredentials writes c to the audit trail a.
func recordCredentials(a *access.Audit, c CredentialsChange) {
	detail := "mqtt.embedded_credentials " + c.File
	if c.Owner != "" {
		detail += " (owner " + c.Owner + ")"
	}
	n := len(c.Added) + len(c.Removed) + len(c.Replaced)
	if n > maxCredentialRecords {
		a.Record(store.AuditRecord{Who: "credentials-file", Agent: "file", Action: "credentials.reload", Outcome: store.AuditOK,
			Detail: detail + ": " + strconv.Itoa(len(c.Added)) + " added, " + strconv.Itoa(len(c.Removed)) + " removed, " + strconv.Itoa(len(c.Replaced)) + " replaced"})
		return
	}
	for _, g := range []struct {
		action string
		ids    []string
	}{{"credentials.add", c.Added}, {"credentials.remove", c.Removed}, {"credentials.replace", c.Replaced}} {
		for _, id := range g.ids {
			a.Record(store.AuditRecord{Who: "credentials-file", Agent: "file", Action: g.action, Object: "device/" + id,
				Outcome: store.AuditOK, Detail: detail})
		}
	}
}
