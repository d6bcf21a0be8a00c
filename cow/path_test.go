package cow

import "testing"

func TestValidPath(t *testing.T) {
	tests := []struct {
		p    string
		want bool
	}{
		{"a", true},
		{"a/b/c.txt", true},
		{".git/HEAD", true},
		{"..foo", true},
		{"a/..b", true},
		{"a b/ c", true},
		{"", false},
		{".", false},
		{"..", false},
		{"/a", false},
		{"a/", false},
		{"a//b", false},
		{"a/./b", false},
		{"a/../b", false},
		{"../a", false},
		{"a/..", false},
		{"a\x00b", false},
	}
	for _, tt := range tests {
		if got := ValidPath(tt.p); got != tt.want {
			t.Errorf("ValidPath(%q) = %v, want %v", tt.p, got, tt.want)
		}
	}
}

func FuzzValidPath(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../x", "/abs", "a//b", ".", "a/./b", "x/..", "é/ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if !ValidPath(p) {
			return
		}
		// A valid path is its own clean form, relative, and never climbs.
		if cleaned := pathClean(p); cleaned != p {
			t.Fatalf("ValidPath(%q) but path.Clean gives %q", p, cleaned)
		}
		if p[0] == '/' || p == ".." || len(p) >= 3 && p[:3] == "../" {
			t.Fatalf("ValidPath(%q) accepted an escaping path", p)
		}
		for _, c := range splitSlash(p) {
			if c == ".." || c == "." || c == "" {
				t.Fatalf("ValidPath(%q) accepted component %q", p, c)
			}
		}
	})
}
