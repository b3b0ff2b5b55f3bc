package wire

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Command is a deployment command: install bundle Bundle on device Device.
// The fleet publishes it, signed with its online key, retained on the
// device's desired topic. JSON field names are the wire format.
type Command struct {
	V       int    `json:"v"`       // ProtocolVersion
	Fleet   string `json:"fleet"`   // fleet name (CheckID)
	Device  string `json:"device"`  // target device ID (CheckID)
	Bundle  string `json:"bundle"`  // SHA-256 of the bundle bytes, lowercase hex
	Rollout string `json:"rollout"` // rollout ID (CheckRolloutID)
	// Seq numbers the commands sent to one device; it only grows, so a
	// device can refuse a replayed older command. With Rollout it
	// identifies the job.
	Seq uint64 `json:"seq"`
	// IssuedAt and ExpiresAt are Unix seconds; a device refuses the
	// command at or after ExpiresAt.
	IssuedAt  int64 `json:"issued_at"`
	ExpiresAt int64 `json:"expires_at"`
	// Rollback allows a bundle whose release counter is below the highest
	// the device installed (an operator-initiated rollback).
	Rollback bool `json:"rollback"`
	// Mode is "" (install and activate the bundle) or ModeShadow (verify
	// and store it, and score it beside the active model without ever
	// letting it change outputs). Promotion is a later install command.
	Mode string `json:"mode,omitempty"`
	// KeyID names the signing key (KeyID); Sig is the Ed25519 signature
	// of Canonical(), base64 (standard, padded).
	KeyID string `json:"key_id"`
	Sig   string `json:"sig"`
}

// ModeShadow is Command.Mode of a shadow deployment.
const ModeShadow = "shadow"

// canonicalMagic starts the signed text; it separates command signatures
// from any other use of the key.
const canonicalMagic = "trit-command/v1\n"

// Canonical returns the bytes the signature covers: a fixed header line,
// then one "name=value" line per field in this order — fleet, device,
// bundle, rollout, seq, issued_at, expires_at, rollback (0 or 1), key_id —
// each ending in "\n", numbers in decimal; then, only for a command with a
// Mode, a last line "mode=…" (so commands without one sign as before). Identifiers cannot contain "\n"
// or "=" (CheckID), so the encoding is unambiguous.
func (c *Command) Canonical() []byte {
	var b strings.Builder
	b.WriteString(canonicalMagic)
	line := func(k, v string) { b.WriteString(k + "=" + v + "\n") }
	line("fleet", c.Fleet)
	line("device", c.Device)
	line("bundle", c.Bundle)
	line("rollout", c.Rollout)
	line("seq", strconv.FormatUint(c.Seq, 10))
	line("issued_at", strconv.FormatInt(c.IssuedAt, 10))
	line("expires_at", strconv.FormatInt(c.ExpiresAt, 10))
	rb := "0"
	if c.Rollback {
		rb = "1"
	}
	line("rollback", rb)
	line("key_id", c.KeyID)
	if c.Mode != "" {
		line("mode", c.Mode)
	}
	return []byte(b.String())
}

// Validate checks every field except the signature.
func (c *Command) Validate() error {
	fail := func(field, format string, args ...any) error {
		return decodeErr(ErrMalformed, "command", field, format, args...)
	}
	if c.V != ProtocolVersion {
		return decodeErr(ErrVersion, "command", "v", "version %d, this program speaks %d", c.V, ProtocolVersion)
	}
	if err := CheckID(c.Fleet); err != nil {
		return fail("fleet", "%v", err)
	}
	if err := CheckID(c.Device); err != nil {
		return fail("device", "%v", err)
	}
	if err := CheckHash(c.Bundle); err != nil {
		return fail("bundle", "%v", err)
	}
	if err := CheckRolloutID(c.Rollout); err != nil {
		return fail("rollout", "%v", err)
	}
	if c.Seq == 0 {
		return fail("seq", "must be at least 1")
	}
	if c.IssuedAt <= 0 {
		return fail("issued_at", "%d, want a positive Unix time", c.IssuedAt)
	}
	if c.ExpiresAt <= c.IssuedAt {
		return fail("expires_at", "%d is not after issued_at %d", c.ExpiresAt, c.IssuedAt)
	}
	if c.Mode != "" && c.Mode != ModeShadow {
		return fail("mode", "%q, want empty (install) or %q", c.Mode, ModeShadow)
	}
	if c.Mode == ModeShadow && c.Rollback {
		return fail("rollback", "a shadow command cannot be a rollback")
	}
	return nil
}

// Sign validates c, sets its KeyID to priv's and signs it.
func (c *Command) Sign(priv ed25519.PrivateKey) error {
	if len(priv) != ed25519.PrivateKeySize {
		return fmt.Errorf("wire: sign command: private key has %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	if c.V == 0 {
		c.V = ProtocolVersion
	}
	if err := c.Validate(); err != nil {
		return err
	}
	c.KeyID = KeyID(priv.Public().(ed25519.PublicKey))
	c.Sig = base64.StdEncoding.EncodeToString(ed25519.Sign(priv, c.Canonical()))
	return nil
}

// Marshal returns the JSON payload of a signed command.
func (c *Command) Marshal() ([]byte, error) {
	if c.Sig == "" {
		return nil, fmt.Errorf("wire: command for %s is not signed", c.Device)
	}
	return json.Marshal(c)
}

// Expiry returns ExpiresAt as a time.
func (c *Command) Expiry() time.Time { return time.Unix(c.ExpiresAt, 0).UTC() }

// DecodeCommand parses a command strictly (size cap, no unknown fields,
// every field valid) without checking its signature; use VerifyCommand for
// anything that acts on it.
func DecodeCommand(data []byte) (*Command, error) {
	var c Command
	if err := decodeStrict(data, MaxCommandSize, "command", &c, func() int { return c.V }); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if _, err := hex.DecodeString(c.KeyID); err != nil || len(c.KeyID) != 16 {
		return nil, decodeErr(ErrMalformed, "command", "key_id", "want 16 lowercase hex digits")
	}
	if c.KeyID != strings.ToLower(c.KeyID) {
		return nil, decodeErr(ErrMalformed, "command", "key_id", "want 16 lowercase hex digits")
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(c.Sig)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, decodeErr(ErrMalformed, "command", "sig", "want %d bytes in padded standard base64", ed25519.SignatureSize)
	}
	return &c, nil
}

// Target names who may act on a command.
type Target struct {
	Fleet, Device string
}

// VerifyCommand decodes a command and checks, in order: its form
// (DecodeCommand), that its key is trusted (ErrUnknownKey), its signature
// (ErrSignature), that it is addressed to target (ErrWrongTarget) and that
// it has not expired at now (ErrExpired). Only a command that passes all of
// these is returned.
func VerifyCommand(data []byte, keys *KeySet, target Target, now time.Time) (*Command, error) {
	c, err := DecodeCommand(data)
	if err != nil {
		return nil, err
	}
	if err := c.Verify(keys, target, now); err != nil {
		return nil, err
	}
	return c, nil
}

// Verify checks a command DecodeCommand returned, as VerifyCommand does:
// a trusted key, its signature, the target and the expiry. The agent
// decodes first (to find the job) and verifies the same value.
func (c *Command) Verify(keys *KeySet, target Target, now time.Time) error {
	pub, ok := keys.lookup(c.KeyID)
	if !ok {
		return decodeErr(ErrUnknownKey, "command", "key_id", "key %s is not among the %d trusted command keys", c.KeyID, keys.Len())
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(c.Sig)
	if err != nil || !ed25519.Verify(pub, c.Canonical(), sig) {
		return decodeErr(ErrSignature, "command", "sig", "Ed25519 signature by key %s does not verify", c.KeyID)
	}
	if c.Fleet != target.Fleet || c.Device != target.Device {
		return decodeErr(ErrWrongTarget, "command", "device", "command is for %s/%s, this is %s/%s", c.Fleet, c.Device, target.Fleet, target.Device)
	}
	if !now.Before(c.Expiry()) {
		return decodeErr(ErrExpired, "command", "expires_at", "expired at %s (now %s)", c.Expiry().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return nil
}
