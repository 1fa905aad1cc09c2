// Package credentialstest is the conformance suite every credentials.Store
// backend must pass (like storetest for store.Store): a backend's test
// calls Run with a constructor, and the suite checks the contract
// documented on credentials.Store through the interface only.
//
// The suite writes credentials under unique names (a prefix, the subtest
// name and a random suffix), deletes what it creates, and runs its
// subtests in parallel, so it can run repeatedly and concurrently against
// one shared emulator. It never assumes the store is empty.
package credentialstest

import (
	"context"
	"crypto/rand"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/credentials"
)

// opTimeout bounds each subtest, so that an unreachable backend fails the
// run instead of hanging it.
const opTimeout = 2 * time.Minute

// Run runs the conformance suite. newStore is called once per subtest and
// must return a ready store (it owns the store's lifetime, typically with
// t.Cleanup). Subtests call t.Parallel, so newStore must be safe for
// concurrent use.
func Run(t *testing.T, newStore func(t *testing.T) credentials.Store) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(ctx context.Context, t *testing.T, s credentials.Store)
	}{
		{"PutGetRoundTrip", testPutGetRoundTrip},
		{"PutReplaceKeepsCreatedAt", testPutReplace},
		{"PutNormalizesKind", testPutNormalizesKind},
		{"PutCopiesData", testPutCopiesData},
		{"PutInvalid", testPutInvalid},
		{"GetNotFound", testGetNotFound},
		{"ListSummaries", testList},
		{"Delete", testDelete},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			if s == nil {
				t.Fatal("credentialstest: newStore returned nil")
			}
			ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
			defer cancel()
			c.fn(ctx, t, s)
		})
	}
}

// uniqueName returns a valid credential name unique to this run.
func uniqueName(t *testing.T, tag string) string {
	t.Helper()
	base := t.Name()
	if i := strings.LastIndex(base, "/"); i >= 0 {
		base = base[i+1:]
	}
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, "ct-"+base+"-"+tag)
	if len(name) > 100 {
		name = name[:100]
	}
	return name + "-" + strings.ToLower(rand.Text()[:10])
}

// put stores c and registers its deletion.
func put(ctx context.Context, t *testing.T, s credentials.Store, c credentials.Credential) {
	t.Helper()
	if err := s.CredentialPut(ctx, c); err != nil {
		t.Fatalf("CredentialPut(%s): %v", c.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if err := s.CredentialDelete(ctx, c.Name); err != nil && !errors.Is(err, credentials.ErrNotFound) {
			t.Errorf("cleanup CredentialDelete(%s): %v", c.Name, err)
		}
	})
}

func get(ctx context.Context, t *testing.T, s credentials.Store, name string) *credentials.Credential {
	t.Helper()
	c, err := s.CredentialGet(ctx, name)
	if err != nil {
		t.Fatalf("CredentialGet(%s): %v", name, err)
	}
	if c == nil {
		t.Fatalf("CredentialGet(%s) = nil, nil", name)
	}
	return c
}

// sampleData holds every JSON value kind, nested.
func sampleData() map[string]any {
	return map[string]any{
		"host":     "db.internal",
		"port":     5432,
		"user":     "app",
		"password": "s3cr3t-Pa55",
		"database": "noetl",
		"ratio":    0.5,
		"ssl":      true,
		"none":     nil,
		"options":  map[string]any{"search_path": "public", "retries": 3, "list": []any{1, "two", []any{3.5}}},
	}
}

// wantData is sampleData as a store returns it (whole numbers as int64).
func wantData() map[string]any {
	return map[string]any{
		"host":     "db.internal",
		"port":     int64(5432),
		"user":     "app",
		"password": "s3cr3t-Pa55",
		"database": "noetl",
		"ratio":    0.5,
		"ssl":      true,
		"none":     nil,
		"options":  map[string]any{"search_path": "public", "retries": int64(3), "list": []any{int64(1), "two", []any{3.5}}},
	}
}

func checkTimes(t *testing.T, what string, c *credentials.Credential, before, after time.Time) {
	t.Helper()
	slack := 2 * time.Second // clocks of an emulator and the test may differ slightly
	for _, ts := range []struct {
		name string
		v    time.Time
	}{{"CreatedAt", c.CreatedAt}, {"UpdatedAt", c.UpdatedAt}} {
		if ts.v.IsZero() {
			t.Fatalf("%s: %s is zero", what, ts.name)
		}
		if ts.v.Location() != time.UTC {
			t.Errorf("%s: %s = %v, want UTC", what, ts.name, ts.v)
		}
		if ts.v.Before(before.Add(-slack)) || ts.v.After(after.Add(slack)) {
			t.Errorf("%s: %s = %v, want within [%v, %v]", what, ts.name, ts.v, before, after)
		}
	}
	if c.UpdatedAt.Before(c.CreatedAt) {
		t.Errorf("%s: UpdatedAt %v before CreatedAt %v", what, c.UpdatedAt, c.CreatedAt)
	}
}

func testPutGetRoundTrip(ctx context.Context, t *testing.T, s credentials.Store) {
	name := uniqueName(t, "pg")
	zero := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	before := time.Now()
	put(ctx, t, s, credentials.Credential{Name: name, Kind: credentials.KindPostgres, Description: "local db",
		Data: sampleData(), CreatedAt: zero, UpdatedAt: zero})
	after := time.Now()
	c := get(ctx, t, s, name)
	if c.Name != name || c.Kind != credentials.KindPostgres || c.Description != "local db" {
		t.Fatalf("CredentialGet = {%q %q %q}, want {%q postgres \"local db\"}", c.Name, c.Kind, c.Description, name)
	}
	if !reflect.DeepEqual(c.Data, wantData()) {
		t.Fatalf("Data = %#v\nwant %#v", c.Data, wantData())
	}
	checkTimes(t, "after put (caller timestamps are ignored)", c, before, after)
	if !c.CreatedAt.Equal(c.UpdatedAt) {
		t.Errorf("first put: CreatedAt %v != UpdatedAt %v", c.CreatedAt, c.UpdatedAt)
	}
}

func testPutReplace(ctx context.Context, t *testing.T, s credentials.Store) {
	name := uniqueName(t, "tok")
	put(ctx, t, s, credentials.Credential{Name: name, Kind: credentials.KindHTTPBearer, Description: "v1",
		Data: map[string]any{"token": "old-token", "extra": "x"}})
	first := get(ctx, t, s, name)
	time.Sleep(20 * time.Millisecond)
	before := time.Now()
	put(ctx, t, s, credentials.Credential{Name: name, Kind: credentials.KindHTTPBearer, Description: "v2",
		Data: map[string]any{"token": "new-token"}})
	after := time.Now()
	c := get(ctx, t, s, name)
	if c.Description != "v2" || !reflect.DeepEqual(c.Data, map[string]any{"token": "new-token"}) {
		t.Fatalf("after replace = %q %#v, want v2 and only the new data", c.Description, c.Data)
	}
	if !c.CreatedAt.Equal(first.CreatedAt) {
		t.Errorf("replace changed CreatedAt: %v -> %v", first.CreatedAt, c.CreatedAt)
	}
	if !c.UpdatedAt.After(first.UpdatedAt) {
		t.Errorf("replace did not advance UpdatedAt: %v -> %v", first.UpdatedAt, c.UpdatedAt)
	}
	if c.UpdatedAt.Before(before.Add(-2*time.Second)) || c.UpdatedAt.After(after.Add(2*time.Second)) {
		t.Errorf("UpdatedAt %v not within [%v, %v]", c.UpdatedAt, before, after)
	}
}

func testPutNormalizesKind(ctx context.Context, t *testing.T, s credentials.Store) {
	for alias, want := range map[string]string{"postgres_credential": credentials.KindPostgres, "Bearer": credentials.KindHTTPBearer, "credential": credentials.KindSecret} {
		name := uniqueName(t, alias)
		data := map[string]any{"host": "h", "token": "t", "k": "v"}
		put(ctx, t, s, credentials.Credential{Name: name, Kind: alias, Data: data})
		if c := get(ctx, t, s, name); c.Kind != want {
			t.Errorf("kind %q stored as %q, want %q", alias, c.Kind, want)
		}
	}
}

func testPutCopiesData(ctx context.Context, t *testing.T, s credentials.Store) {
	name := uniqueName(t, "copy")
	data := map[string]any{"key": "v1", "nested": map[string]any{"a": "b"}}
	put(ctx, t, s, credentials.Credential{Name: name, Kind: credentials.KindSecret, Data: data})
	data["key"] = "changed"
	data["nested"].(map[string]any)["a"] = "changed"
	c := get(ctx, t, s, name)
	want := map[string]any{"key": "v1", "nested": map[string]any{"a": "b"}}
	if !reflect.DeepEqual(c.Data, want) {
		t.Fatalf("store kept the caller's map: %#v", c.Data)
	}
	c.Data["key"] = "mutated"
	c.Data["nested"].(map[string]any)["a"] = "mutated"
	if again := get(ctx, t, s, name); !reflect.DeepEqual(again.Data, want) {
		t.Fatalf("store returned shared data: %#v", again.Data)
	}
}

func testPutInvalid(ctx context.Context, t *testing.T, s credentials.Store) {
	good := map[string]any{"token": "abc"}
	cases := map[string]credentials.Credential{
		"empty name":         {Name: "", Kind: "secret", Data: good},
		"slash in name":      {Name: "a/b", Kind: "secret", Data: good},
		"dot in name":        {Name: "a.b", Kind: "secret", Data: good},
		"reserved name":      {Name: "__" + uniqueName(t, "rsv") + "__", Kind: "secret", Data: good},
		"long name":          {Name: strings.Repeat("n", credentials.MaxNameLen+1), Kind: "secret", Data: good},
		"no kind":            {Name: uniqueName(t, "nokind"), Data: good},
		"unknown kind":       {Name: uniqueName(t, "badkind"), Kind: "ldap", Data: good},
		"no data":            {Name: uniqueName(t, "nodata"), Kind: "secret"},
		"bearer no token":    {Name: uniqueName(t, "notoken"), Kind: "http_bearer", Data: map[string]any{"x": "y"}},
		"basic no password":  {Name: uniqueName(t, "nopass"), Kind: "http_basic", Data: map[string]any{"username": "u"}},
		"header no value":    {Name: uniqueName(t, "nohdr"), Kind: "http_header", Data: map[string]any{"header": "X-Key"}},
		"postgres no host":   {Name: uniqueName(t, "nohost"), Kind: "postgres", Data: map[string]any{"user": "u"}},
		"data not encodable": {Name: uniqueName(t, "chan"), Kind: "secret", Data: map[string]any{"c": make(chan int)}},
	}
	for what, c := range cases {
		err := s.CredentialPut(ctx, c)
		if !errors.Is(err, credentials.ErrInvalid) {
			t.Errorf("%s: CredentialPut = %v, want ErrInvalid", what, err)
			continue
		}
		if credentials.ValidateName(c.Name) == nil {
			if _, err := s.CredentialGet(ctx, c.Name); !errors.Is(err, credentials.ErrNotFound) {
				t.Errorf("%s: invalid credential was stored (CredentialGet = %v)", what, err)
			}
		}
	}
}

func testGetNotFound(ctx context.Context, t *testing.T, s credentials.Store) {
	for _, name := range []string{uniqueName(t, "missing"), "", "a/b"} {
		c, err := s.CredentialGet(ctx, name)
		if !errors.Is(err, credentials.ErrNotFound) || c != nil {
			t.Errorf("CredentialGet(%q) = %v, %v; want nil, ErrNotFound", name, c, err)
		}
	}
}

func testList(ctx context.Context, t *testing.T, s credentials.Store) {
	a, b := uniqueName(t, "a"), uniqueName(t, "b")
	put(ctx, t, s, credentials.Credential{Name: b, Kind: "http_basic", Description: "basic",
		Data: map[string]any{"username": "u", "password": "p4ssw0rd"}})
	put(ctx, t, s, credentials.Credential{Name: a, Kind: "postgres", Description: "pg", Data: sampleData()})
	ca, cb := get(ctx, t, s, a), get(ctx, t, s, b)
	list, err := s.CredentialList(ctx)
	if err != nil {
		t.Fatalf("CredentialList: %v", err)
	}
	if list == nil {
		t.Fatal("CredentialList returned a nil slice")
	}
	for i := 1; i < len(list); i++ {
		if list[i-1].Name >= list[i].Name {
			t.Fatalf("CredentialList not sorted by name: %q before %q", list[i-1].Name, list[i].Name)
		}
	}
	found := map[string]credentials.Summary{}
	for _, sm := range list {
		if sm.Name == a || sm.Name == b {
			found[sm.Name] = sm
		}
	}
	want := map[string]credentials.Summary{
		a: {Name: a, Kind: "postgres", Description: "pg", Keys: []string{"database", "host", "none", "options", "password", "port", "ratio", "ssl", "user"},
			CreatedAt: ca.CreatedAt, UpdatedAt: ca.UpdatedAt},
		b: {Name: b, Kind: "http_basic", Description: "basic", Keys: []string{"password", "username"},
			CreatedAt: cb.CreatedAt, UpdatedAt: cb.UpdatedAt},
	}
	for n, w := range want {
		got, ok := found[n]
		if !ok {
			t.Errorf("CredentialList lacks %s", n)
			continue
		}
		if got.Name != w.Name || got.Kind != w.Kind || got.Description != w.Description || !reflect.DeepEqual(got.Keys, w.Keys) ||
			!got.CreatedAt.Equal(w.CreatedAt) || !got.UpdatedAt.Equal(w.UpdatedAt) {
			t.Errorf("summary of %s = %+v\nwant %+v", n, got, w)
		}
	}
}

func testDelete(ctx context.Context, t *testing.T, s credentials.Store) {
	name := uniqueName(t, "del")
	put(ctx, t, s, credentials.Credential{Name: name, Kind: "secret", Data: map[string]any{"k": "v"}})
	if err := s.CredentialDelete(ctx, name); err != nil {
		t.Fatalf("CredentialDelete: %v", err)
	}
	if _, err := s.CredentialGet(ctx, name); !errors.Is(err, credentials.ErrNotFound) {
		t.Fatalf("CredentialGet after delete = %v, want ErrNotFound", err)
	}
	if err := s.CredentialDelete(ctx, name); !errors.Is(err, credentials.ErrNotFound) {
		t.Fatalf("second CredentialDelete = %v, want ErrNotFound", err)
	}
	if err := s.CredentialDelete(ctx, uniqueName(t, "never")); !errors.Is(err, credentials.ErrNotFound) {
		t.Fatalf("CredentialDelete(missing) = %v, want ErrNotFound", err)
	}
	list, err := s.CredentialList(ctx)
	if err != nil {
		t.Fatalf("CredentialList: %v", err)
	}
	for _, sm := range list {
		if sm.Name == name {
			t.Fatalf("CredentialList still has deleted %s", name)
		}
	}
	// The name can be reused, with a fresh CreatedAt.
	before := time.Now()
	put(ctx, t, s, credentials.Credential{Name: name, Kind: "secret", Data: map[string]any{"k": "v2"}})
	if c := get(ctx, t, s, name); c.CreatedAt.Before(before.Add(-2*time.Second)) || c.Data["k"] != "v2" {
		t.Fatalf("re-created credential = %+v", c)
	}
}
