package store

import (
	"fmt"
	"strconv"
	"time"
)

// PlaybookPutParams registers a playbook version in the catalog
// (Firestore playbooks/{path}/versions/{version}).
type PlaybookPutParams struct {
	// Path is the catalog key (the playbook's metadata.path, or its name).
	Path string
	Name string
	// Source is the playbook YAML.
	Source string
}

// PlaybookVersion is one stored version.
type PlaybookVersion struct {
	Path      string    `json:"path"`
	Name      string    `json:"name"`
	Version   int       `json:"version"` // 1, 2, ... in registration order
	Source    string    `json:"source,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// PlaybookSummary lists one catalog entry.
type PlaybookSummary struct {
	Path      string    `json:"path"`
	Name      string    `json:"name"`
	Latest    int       `json:"latest"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ParseVersion parses a catalog version ("" or "latest" = 0, "3" = 3).
func ParseVersion(s string) (int, error) {
	if s == "" || s == "latest" {
		return 0, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		return 0, fmt.Errorf("invalid playbook version %q: want a positive integer or \"latest\"", s)
	}
	return v, nil
}
