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
	"strconv"
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
		{"GrantsAndInfo", testGrantsAndInfo},
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
		Grants: []string{"examples/*", "inline:token"}, Data: sampleData(), CreatedAt: zero, UpdatedAt: zero})
	after := time.Now()
	c := get(ctx, t, s, name)
	if c.Name != name || c.Kind != credentials.KindPostgres || c.Description != "local db" {
		t.Fatalf("CredentialGet = {%q %q %q}, want {%q postgres \"local db\"}", c.Name, c.Kind, c.Description, name)
	}
	if !reflect.DeepEqual(c.Grants, []string{"examples/*", "inline:token"}) {
		t.Fatalf("Grants = %#v, want [examples/* inline:token]", c.Grants)
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
		"absolute grant":     {Name: uniqueName(t, "gabs"), Kind: "secret", Data: good, Grants: []string{"/etc/x"}},
		"dot-dot grant":      {Name: uniqueName(t, "gdot"), Kind: "secret", Data: good, Grants: []string{"examples/../x"}},
		"empty grant":        {Name: uniqueName(t, "gempty"), Kind: "secret", Data: good, Grants: []string{""}},
		"bad glob grant":     {Name: uniqueName(t, "gglob"), Kind: "secret", Data: good, Grants: []string{"examples/[a"}},
		"empty inline grant": {Name: uniqueName(t, "ginl"), Kind: "secret", Data: good, Grants: []string{"inline:"}},
		"too many grants":    {Name: uniqueName(t, "gmany"), Kind: "secret", Data: good, Grants: manyGrants()},
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
	put(ctx, t, s, credentials.Credential{Name: b, Kind: "http_basic", Description: "basic", Grants: []string{"tests/**"},
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
			Grants: []string{}, CreatedAt: ca.CreatedAt, UpdatedAt: ca.UpdatedAt},
		b: {Name: b, Kind: "http_basic", Description: "basic", Keys: []string{"password", "username"},
			Grants: []string{"tests/**"}, CreatedAt: cb.CreatedAt, UpdatedAt: cb.UpdatedAt},
	}
	for n, w := range want {
		got, ok := found[n]
		if !ok {
			t.Errorf("CredentialList lacks %s", n)
			continue
		}
		if got.Name != w.Name || got.Kind != w.Kind || got.Description != w.Description || !reflect.DeepEqual(got.Keys, w.Keys) || !reflect.DeepEqual(got.Grants, w.Grants) ||
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

func manyGrants() []string {
	out := make([]string, credentials.MaxGrants+1)
	for i := range out {
		out[i] = "examples/g" + strconv.Itoa(i)
	}
	return out
}

// testGrantsAndInfo: grants round-trip (replaced by a later put, copied in
// and out), CredentialInfo gives the metadata and grants without the
// data, and ErrNotFound for a missing name.
func testGrantsAndInfo(ctx context.Context, t *testing.T, s credentials.Store) {
	name := uniqueName(t, "grants")
	grants := []string{"tests/fixtures/**", "inline:*@example.com"}
	put(ctx, t, s, credentials.Credential{Name: name, Kind: "secret", Description: "granted", Grants: grants, Data: map[string]any{"k": "v-secret"}})
	grants[0] = "changed/**"
	info, err := s.CredentialInfo(ctx, name)
	if err != nil {
		t.Fatalf("CredentialInfo: %v", err)
	}
	c := get(ctx, t, s, name)
	want := credentials.Summary{Name: name, Kind: "secret", Description: "granted", Keys: []string{"k"},
		Grants: []string{"tests/fixtures/**", "inline:*@example.com"}, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	if !reflect.DeepEqual(*info, want) {
		t.Fatalf("CredentialInfo = %+v\nwant %+v", *info, want)
	}
	info.Grants[0] = "mutated"
	if again, _ := s.CredentialInfo(ctx, name); again == nil || again.Grants[0] != "tests/fixtures/**" {
		t.Fatalf("store returned shared grants: %+v", again)
	}
	// A later put replaces the grants (none is an empty list).
	put(ctx, t, s, credentials.Credential{Name: name, Kind: "secret", Data: map[string]any{"k": "v2"}})
	if c := get(ctx, t, s, name); c.Grants == nil || len(c.Grants) != 0 {
		t.Fatalf("grants after a put without grants = %#v, want an empty list", c.Grants)
	}
	if _, err := s.CredentialInfo(ctx, uniqueName(t, "missing")); !errors.Is(err, credentials.ErrNotFound) {
		t.Fatalf("CredentialInfo(missing) = %v, want ErrNotFound", err)
	}
	if _, err := s.CredentialInfo(ctx, "a/b"); !errors.Is(err, credentials.ErrNotFound) {
		t.Fatalf("CredentialInfo(a/b) = %v, want ErrNotFound", err)
	}
}

// RunValues is the conformance suite of a credentials.Values driver:
// versions are opaque and distinct, each put is readable by its version
// (a fresh copy) until deleted, a version never reads under another
// credential's name, and deletes of one version or of all are
// idempotent. newValues is called once per subtest (subtests run in
// parallel, with unique credential names).
func RunValues(t *testing.T, newValues func(t *testing.T) credentials.Values) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(ctx context.Context, t *testing.T, v credentials.Values)
	}{
		{"PutGetVersions", testValuesPutGet},
		{"GetUnknown", testValuesGetUnknown},
		{"Delete", testValuesDelete},
		{"InvalidName", testValuesInvalidName},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			v := newValues(t)
			if v == nil {
				t.Fatal("credentialstest: newValues returned nil")
			}
			ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
			defer cancel()
			c.fn(ctx, t, v)
		})
	}
}

func valuePut(ctx context.Context, t *testing.T, v credentials.Values, name string, b []byte) string {
	t.Helper()
	ver, err := v.ValuePut(ctx, name, b)
	if err != nil || ver == "" {
		t.Fatalf("ValuePut(%s) = %q, %v", name, ver, err)
	}
	t.Cleanup(func() { _ = v.ValueDelete(context.Background(), name, "") })
	return ver
}

func valueGet(ctx context.Context, t *testing.T, v credentials.Values, name, ver string) []byte {
	t.Helper()
	b, err := v.ValueGet(ctx, name, ver)
	if err != nil {
		t.Fatalf("ValueGet(%s, %s): %v", name, ver, err)
	}
	return b
}

func testValuesPutGet(ctx context.Context, t *testing.T, v credentials.Values) {
	name := uniqueName(t, "val")
	in := []byte(`{"password":"p@ss\u00e9","n":1}`)
	v1 := valuePut(ctx, t, v, name, in)
	in[0] = 'X'
	v2 := valuePut(ctx, t, v, name, []byte(`{"password":"second"}`))
	if v1 == v2 {
		t.Fatalf("two puts returned the same version %q", v1)
	}
	got := valueGet(ctx, t, v, name, v1)
	if string(got) != `{"password":"p@ss\u00e9","n":1}` {
		t.Fatalf("version 1 = %q (the store kept the caller's slice?)", got)
	}
	got[0] = 'Y'
	if again := valueGet(ctx, t, v, name, v1); again[0] != '{' {
		t.Fatalf("ValueGet returned shared bytes: %q", again)
	}
	if got := valueGet(ctx, t, v, name, v2); string(got) != `{"password":"second"}` {
		t.Fatalf("version 2 = %q", got)
	}
	// Binary and empty values round-trip.
	bin := []byte{0, 1, 2, 0xff, '\n'}
	if got := valueGet(ctx, t, v, name, valuePut(ctx, t, v, name, bin)); string(got) != string(bin) {
		t.Fatalf("binary value = %v", got)
	}
}

func testValuesGetUnknown(ctx context.Context, t *testing.T, v credentials.Values) {
	a, b := uniqueName(t, "a"), uniqueName(t, "b")
	va := valuePut(ctx, t, v, a, []byte("secret-of-a"))
	for what, c := range map[string][2]string{
		"unknown name":            {uniqueName(t, "none"), va},
		"version of another name": {b, va},
		"empty version":           {a, ""},
		"made-up version":         {a, va + "x"},
		"latest alias":            {a, "latest"},
	} {
		if got, err := v.ValueGet(ctx, c[0], c[1]); !errors.Is(err, credentials.ErrNotFound) {
			t.Errorf("%s: ValueGet(%q, %q) = %q, %v; want ErrNotFound", what, c[0], c[1], got, err)
		}
	}
}

func testValuesDelete(ctx context.Context, t *testing.T, v credentials.Values) {
	name := uniqueName(t, "del")
	v1 := valuePut(ctx, t, v, name, []byte("one"))
	v2 := valuePut(ctx, t, v, name, []byte("two"))
	if err := v.ValueDelete(ctx, name, v1); err != nil {
		t.Fatalf("ValueDelete(v1): %v", err)
	}
	if _, err := v.ValueGet(ctx, name, v1); !errors.Is(err, credentials.ErrNotFound) {
		t.Fatalf("ValueGet after delete = %v, want ErrNotFound", err)
	}
	if got := valueGet(ctx, t, v, name, v2); string(got) != "two" {
		t.Fatalf("the other version = %q after deleting one", got)
	}
	if err := v.ValueDelete(ctx, name, v1); err != nil {
		t.Fatalf("second ValueDelete(v1) = %v, want nil", err)
	}
	v3 := valuePut(ctx, t, v, name, []byte("three"))
	if err := v.ValueDelete(ctx, name, ""); err != nil {
		t.Fatalf("ValueDelete(all): %v", err)
	}
	for _, ver := range []string{v2, v3} {
		if _, err := v.ValueGet(ctx, name, ver); !errors.Is(err, credentials.ErrNotFound) {
			t.Fatalf("ValueGet(%s) after deleting all = %v, want ErrNotFound", ver, err)
		}
	}
	if err := v.ValueDelete(ctx, name, ""); err != nil {
		t.Fatalf("ValueDelete(all) again = %v", err)
	}
	if err := v.ValueDelete(ctx, uniqueName(t, "never"), ""); err != nil {
		t.Fatalf("ValueDelete(unknown) = %v", err)
	}
	// The name is reusable.
	if got := valueGet(ctx, t, v, name, valuePut(ctx, t, v, name, []byte("again"))); string(got) != "again" {
		t.Fatalf("value after re-put = %q", got)
	}
}

func testValuesInvalidName(ctx context.Context, t *testing.T, v credentials.Values) {
	for _, name := range []string{"", "a/b", "a.b", strings.Repeat("n", credentials.MaxNameLen+1)} {
		if ver, err := v.ValuePut(ctx, name, []byte("x")); !errors.Is(err, credentials.ErrInvalid) {
			t.Errorf("ValuePut(%q) = %q, %v; want ErrInvalid", name, ver, err)
		}
	}
}
