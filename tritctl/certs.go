package tritctl

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/internal/cli"
	"github.com/trit-iot/trit/internal/newfile"
	"github.com/trit-iot/trit/wire"
)

// The fleet's MQTT PKI: one CA per fleet signs the broker's server
// certificate and one client certificate per device (and one for the fleet
// service, CN trit-fleet). Mosquitto maps a client certificate's common name
// to the MQTT user name (use_identity_as_username), which the ACL's pattern
// lines (%u) compare with the device ID in the topic, and to the client ID
// (use_username_as_clientid), so no client can take over another's session.
// A device's common name is therefore its device ID, and the fleet service's
// is its client_id (trit-fleet). Keys are ECDSA P-256, written 0600 and never
// overwritten.

// FleetIdentity is the common name of the fleet service's client
// certificate; the production ACL grants it the whole topic prefix.
const FleetIdentity = "trit-fleet"

// Certificate file names inside a directory.
const (
	caCertFile = "ca.crt"
	caKeyFile  = "ca.key"
)

// certOptions say what certificate issueCert makes.
type certOptions struct {
	CommonName string
	CA         bool
	Server     bool // server auth (with DNS/IPs) rather than client auth
	DNS        []string
	IPs        []net.IP
	Validity   time.Duration
}

// issueCert creates a key and a certificate for o, signed by parent/parentKey
// (self-signed when parent is nil).
func issueCert(o certOptions, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: o.CommonName, Organization: []string{"trit"}},
		NotBefore:    now.Add(-5 * time.Minute), // tolerate small clock skew
		NotAfter:     now.Add(o.Validity),
		DNSNames:     o.DNS,
		IPAddresses:  o.IPs,
	}
	switch {
	case o.CA:
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.MaxPathLenZero = true, true, true
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	case o.Server:
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	default:
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// writeCertPair writes name.crt (0644) and name.key (0600) into dir,
// refusing to overwrite either.
func writeCertPair(dir, name string, cert *x509.Certificate, key *ecdsa.PrivateKey) (certPath, keyPath string, err error) {
	certPath, keyPath = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	for _, p := range []string{certPath, keyPath} {
		if _, err := os.Lstat(p); err == nil {
			return "", "", fmt.Errorf("%s already exists; refusing to overwrite it: tritctl never replaces a key or its certificate (choose another --out, or move the old files away first)", p)
		}
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	if err := newfile.Write(keyPath, 0o600, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})); err != nil {
		return "", "", err
	}
	if err := newfile.Write(certPath, 0o644, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})); err != nil {
		os.Remove(keyPath)
		return "", "", err
	}
	return certPath, keyPath, nil
}

// loadCA reads ca.crt and ca.key from dir, up to wire.MaxCertFile (1 MiB)
// and bundle.MaxKeyFile (64 KiB) bytes. The key must not be readable by
// group or others.
func loadCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := readSmallFile(filepath.Join(dir, caCertFile), "certificate file", wire.MaxCertFile)
	if err != nil {
		return nil, nil, fmt.Errorf("fleet CA: %w", err)
	}
	keyPath := filepath.Join(dir, caKeyFile)
	if fi, err := os.Stat(keyPath); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, nil, fmt.Errorf("fleet CA key %s has mode %v; it must be accessible by its owner only (chmod 600)", keyPath, fi.Mode().Perm())
	}
	keyPEM, err := readSmallFile(keyPath, "key file", bundle.MaxKeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("fleet CA: %w", err)
	}
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, nil, fmt.Errorf("%s: no PEM certificate", filepath.Join(dir, caCertFile))
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Join(dir, caCertFile), err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil || kb.Type != "EC PRIVATE KEY" {
		return nil, nil, fmt.Errorf("%s: no PEM EC private key", keyPath)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: not an EC private key", keyPath) // never echo key bytes
	}
	if !cert.IsCA {
		return nil, nil, fmt.Errorf("%s is not a CA certificate", filepath.Join(dir, caCertFile))
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, nil, errors.New("fleet CA: ca.key does not belong to ca.crt")
	}
	return cert, key, nil
}

func newCertsCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "certs",
		Short: "Issue the fleet's MQTT TLS certificates (CA, broker, devices)",
		Long: `Issue the fleet's MQTT certificates. One CA per fleet signs the broker's
server certificate and a client certificate per device, whose common name is
the device ID: Mosquitto (use_identity_as_username, use_username_as_clientid)
and the ACL in fleet/mosquitto/ then make it the client's user name and client
ID and let each device use only its own topics. The fleet service's own
certificate has the common name trit-fleet (its mqtt.client_id).

A key or certificate file that exists is never replaced: give another
directory, or move the old files away first.`,
		Example: `  tritctl certs ca -o pki
  tritctl certs server --ca-dir pki -o pki --host broker.example.com
  tritctl certs client --ca-dir pki -o pki --id gw-0001`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return usagef("certs: give a subcommand (ca, server, client)") },
	}
	var dir, name string
	var years int
	ca := &cobra.Command{
		Use:   "ca",
		Short: "Create the fleet CA (ca.crt, ca.key) in --out",
		Example: `  tritctl certs ca -o pki                          # once per fleet; keep pki/ca.key offline
  tritctl certs ca -o pki-2 --name "plant-a CA" --years 5`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			cert, key, err := issueCert(certOptions{CommonName: name, CA: true, Validity: time.Duration(years) * 365 * 24 * time.Hour}, nil, nil, time.Now())
			if err != nil {
				return err
			}
			c, k, err := writeCertPair(dir, "ca", cert, key)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "fleet CA %q valid until %s\n  certificate %s\n  private key %s (keep it offline)\n", name, cert.NotAfter.Format(time.DateOnly), c, k)
			return nil
		},
	}
	ca.Flags().StringVarP(&dir, "out", "o", "pki", "directory for ca.crt and ca.key")
	cli.Renamed(ca, "out", "dir") // its name before the vocabulary
	ca.Flags().StringVar(&name, "name", "trit fleet CA", "the CA's common name")
	ca.Flags().IntVar(&years, "years", 10, "validity in years")

	var caDir, out string
	var hosts []string
	var clientYears int
	server := &cobra.Command{
		Use:   "server",
		Short: "Issue the broker's server certificate (server.crt, server.key)",
		Example: `  tritctl certs server --ca-dir pki -o pki --host broker.example.com
  tritctl certs server --ca-dir pki -o pki/broker-2 --host broker-2.example.com --host 10.0.0.5`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if len(hosts) == 0 {
				return usagef("give the broker's host names or IP addresses with --host")
			}
			var o certOptions
			o.CommonName, o.Server, o.Validity = hosts[0], true, time.Duration(clientYears)*365*24*time.Hour
			for _, h := range hosts {
				if ip := net.ParseIP(h); ip != nil {
					o.IPs = append(o.IPs, ip)
				} else {
					o.DNS = append(o.DNS, h)
				}
			}
			return issueSigned(e, caDir, out, "server", o)
		},
	}
	server.Flags().StringVar(&caDir, "ca-dir", "pki", "directory holding ca.crt and ca.key")
	server.Flags().StringVarP(&out, "out", "o", "pki", "output directory")
	server.Flags().StringSliceVar(&hosts, "host", nil, "broker host name or IP address (repeatable)")
	server.Flags().IntVar(&clientYears, "years", 2, "validity in years")

	var id string
	client := &cobra.Command{
		Use:   "client",
		Short: "Issue a device's (or the fleet service's) client certificate",
		Long: `Issue a client certificate whose common name is --id: a device ID (the
agent's device_id), or trit-fleet for the fleet service (its mqtt.client_id).
The production broker uses the common name as the client's user name and
client ID, so it must be exactly that ID. The files are <id>.crt and <id>.key
in --out.`,
		Example: `  tritctl certs client --ca-dir pki -o pki --id gw-0001      # one per gateway
  tritctl certs client --ca-dir pki -o pki --id trit-fleet   # the fleet service's identity`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := wire.CheckID(id); err != nil {
				return usagef("--id: %v", err)
			}
			return issueSigned(e, caDir, out, id, certOptions{CommonName: id, Validity: time.Duration(clientYears) * 365 * 24 * time.Hour})
		},
	}
	client.Flags().StringVar(&caDir, "ca-dir", "pki", "directory holding ca.crt and ca.key")
	client.Flags().StringVarP(&out, "out", "o", "pki", "output directory")
	client.Flags().StringVar(&id, "id", "", "device ID, or "+FleetIdentity+" for the fleet service")
	client.Flags().IntVar(&clientYears, "years", 2, "validity in years")
	cmd.AddCommand(ca, server, client)
	return cmd
}

func issueSigned(e *env, caDir, out, name string, o certOptions) error {
	caCert, caKey, err := loadCA(caDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o700); err != nil {
		return err
	}
	cert, key, err := issueCert(o, caCert, caKey, time.Now())
	if err != nil {
		return err
	}
	c, k, err := writeCertPair(out, name, cert, key)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s valid until %s\n  certificate %s\n  private key %s\n", o.CommonName, cert.NotAfter.Format(time.DateOnly), c, k)
	return nil
}
