package suggest

import "testing"

func TestNearest(t *testing.T) {
	names := []string{"http", "python", "postgres", "duckdb", "upper", "lower"}
	for name, want := range map[string]string{
		"htpp": "http", "pyhton": "python", "postgre": "postgres", "uper": "upper",
		"upperr": "upper", "ftp": "", "x": "", "": "", "kafka": "", "http": "http", "pyhotn": "python",
	} {
		if got := Nearest(name, names); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}, {"nxet", "next", 1}, {"nxet", "set", 2}, {"ab", "ba", 1}, {"ca", "abc", 3}, {string(make([]byte, 65)), "x", 64}} {
		if got := EditDistance(c.a, c.b); got != c.d {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
