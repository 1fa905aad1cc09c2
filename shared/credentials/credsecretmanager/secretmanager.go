// Package credsecretmanager is the Google Secret Manager driver of the
// credential store's values (shared/credentials.Values) in GCP. Only the
// control plane's wiring (shared/wiring) imports it: the runner links no
// Secret Manager client (the boundary test, shared/planes).
package credsecretmanager

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"
	"cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/deploy"
	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps the Google clients' errors
)

// SecretManager keeps credential values in Google Secret Manager (the
// official client, cloud.google.com/go/secretmanager): credential <name>
// is the secret noetl-cred-<name> (deploy.SecretPrefix) of the project,
// each put a new secret version, the version its full resource name
// (projects/P/secrets/noetl-cred-<name>/versions/N). Terraform creates the
// secrets of var.credentials and lets the api add and destroy versions
// (roles/secretmanager.secretVersionManager) and the functions that
// resolve keychains read them (roles/secretmanager.secretAccessor); a put
// of a credential whose secret does not exist creates it, which needs
// secretmanager.secrets.create on the project (else the error says to add
// the name to var.credentials). Payloads carry a CRC32C both ways.
type SecretManager struct {
	c       smClient
	project string
}

// smClient is the part of *secretmanager.Client the driver uses.
type smClient interface {
	CreateSecret(ctx context.Context, req *secretmanagerpb.CreateSecretRequest, opts ...gax.CallOption) (*secretmanagerpb.Secret, error)
	AddSecretVersion(ctx context.Context, req *secretmanagerpb.AddSecretVersionRequest, opts ...gax.CallOption) (*secretmanagerpb.SecretVersion, error)
	AccessSecretVersion(ctx context.Context, req *secretmanagerpb.AccessSecretVersionRequest, opts ...gax.CallOption) (*secretmanagerpb.AccessSecretVersionResponse, error)
	ListSecretVersions(ctx context.Context, req *secretmanagerpb.ListSecretVersionsRequest, opts ...gax.CallOption) *secretmanager.SecretVersionIterator
	DestroySecretVersion(ctx context.Context, req *secretmanagerpb.DestroySecretVersionRequest, opts ...gax.CallOption) (*secretmanagerpb.SecretVersion, error)
}

// NewSecretManager returns the driver on c (owned by the caller) for
// project's secrets.
func NewSecretManager(c *secretmanager.Client, project string) *SecretManager {
	return &SecretManager{c: c, project: project}
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// secret is the resource name of credential name's secret.
func (s *SecretManager) secret(name string) string {
	return "projects/" + s.project + "/secrets/" + deploy.SecretPrefix + name
}

// ValuePut implements Values: AddSecretVersion, creating the secret
// (automatic replication, label managed-by=noetl) when it is missing.
func (s *SecretManager) ValuePut(ctx context.Context, name string, value []byte) (string, error) {
	if err := credentials.ValidateName(name); err != nil {
		return "", err
	}
	crc := int64(crc32.Checksum(value, crcTable))
	add := func() (*secretmanagerpb.SecretVersion, error) {
		return s.c.AddSecretVersion(ctx, &secretmanagerpb.AddSecretVersionRequest{Parent: s.secret(name),
			Payload: &secretmanagerpb.SecretPayload{Data: value, DataCrc32C: &crc}})
	}
	v, err := add()
	if isCode(err, codes.NotFound) {
		_, cerr := s.c.CreateSecret(ctx, &secretmanagerpb.CreateSecretRequest{Parent: "projects/" + s.project, SecretId: deploy.SecretPrefix + name,
			Secret: &secretmanagerpb.Secret{Labels: map[string]string{"managed-by": "noetl"},
				Replication: &secretmanagerpb.Replication{Replication: &secretmanagerpb.Replication_Automatic_{Automatic: &secretmanagerpb.Replication_Automatic{}}}}})
		switch {
		case isCode(cerr, codes.PermissionDenied):
			return "", fmt.Errorf("credentials: secret %s does not exist and this function may not create it: add %q to the Terraform variable credentials: %w", s.secret(name), name, cerr)
		case cerr != nil && !isCode(cerr, codes.AlreadyExists):
			return "", fmt.Errorf("credentials: create secret %s: %w", s.secret(name), cerr)
		}
		v, err = add()
	}
	if err != nil {
		return "", fmt.Errorf("credentials: add a version to %s: %w", s.secret(name), err)
	}
	if !strings.HasPrefix(v.GetName(), s.secret(name)+"/versions/") {
		return "", fmt.Errorf("credentials: Secret Manager answered version %q for %s", v.GetName(), s.secret(name))
	}
	return v.GetName(), nil
}

// ValueGet implements Values: AccessSecretVersion of exactly version,
// which must be a numbered version of name's secret (never "latest"), with its
// CRC32C checked.
func (s *SecretManager) ValueGet(ctx context.Context, name, version string) ([]byte, error) {
	rest, ok := strings.CutPrefix(version, s.secret(name)+"/versions/")
	if credentials.ValidateName(name) != nil || !ok || rest == "" || strings.Trim(rest, "0123456789") != "" {
		return nil, credentials.NotFoundf("credentials: value %s of %q: not a version of %s", version, name, s.secret(name))
	}
	r, err := s.c.AccessSecretVersion(ctx, &secretmanagerpb.AccessSecretVersionRequest{Name: version})
	switch {
	case isCode(err, codes.NotFound), isCode(err, codes.FailedPrecondition): // gone, disabled or destroyed
		return nil, credentials.NotFoundf("credentials: value %s of %q: %v", version, name, err)
	case err != nil:
		return nil, fmt.Errorf("credentials: access %s: %w", version, err)
	}
	data := r.GetPayload().GetData()
	if c := r.GetPayload().DataCrc32C; c != nil && *c != int64(crc32.Checksum(data, crcTable)) {
		return nil, fmt.Errorf("credentials: access %s: the payload does not match its CRC32C", version)
	}
	return append([]byte(nil), data...), nil
}

// ValueDelete implements Values: DestroySecretVersion of the version, or
// of every version not yet destroyed (the secret itself stays: Terraform
// owns it).
func (s *SecretManager) ValueDelete(ctx context.Context, name, version string) error {
	if credentials.ValidateName(name) != nil {
		return nil
	}
	destroy := func(v string) error {
		_, err := s.c.DestroySecretVersion(ctx, &secretmanagerpb.DestroySecretVersionRequest{Name: v})
		if err != nil && !isCode(err, codes.NotFound) && !isCode(err, codes.FailedPrecondition) {
			return fmt.Errorf("credentials: destroy %s: %w", v, err)
		}
		return nil
	}
	if version != "" {
		if !strings.HasPrefix(version, s.secret(name)+"/versions/") {
			return nil
		}
		return destroy(version)
	}
	it := s.c.ListSecretVersions(ctx, &secretmanagerpb.ListSecretVersionsRequest{Parent: s.secret(name)})
	for {
		v, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return nil
		}
		if isCode(err, codes.NotFound) {
			return nil // no secret: nothing to delete
		}
		if err != nil {
			return fmt.Errorf("credentials: list the versions of %s: %w", s.secret(name), err)
		}
		if v.GetState() == secretmanagerpb.SecretVersion_DESTROYED {
			continue
		}
		if err := destroy(v.GetName()); err != nil {
			return err
		}
	}
}

func isCode(err error, c codes.Code) bool { return status.Code(err) == c }
