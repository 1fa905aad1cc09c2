package stack

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"

	"github.com/noetl/gcpengine/emulators/cloudtasks"
)

// newOIDCSigner makes the Cloud Tasks emulator's OIDC key for this run of
// the stack and publishes it: the JWK set to c.JWKSFile() (mode 0644, read
// by execute through NOETL_OIDC_JWKS_FILE) and the private key to
// c.OIDCKeyFile() (PKCS #8 PEM, mode 0600, for tests that call execute
// directly). A new key per start: tokens of an earlier run stop verifying.
func newOIDCSigner(c Config) (*cloudtasks.OIDCSigner, error) {
	key, err := cloudtasks.GenerateOIDCKey()
	if err != nil {
		return nil, fmt.Errorf("OIDC key: %w", err)
	}
	s, err := cloudtasks.NewOIDCSigner(key)
	if err != nil {
		return nil, err
	}
	jwks, err := s.JWKS()
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("OIDC key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(c.JWKSFile()), 0o755); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(c.OIDCKeyFile(), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(c.JWKSFile(), jwks, 0o644); err != nil {
		return nil, err
	}
	return s, nil
}
