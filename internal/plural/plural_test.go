package plural

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n          int
		noun, want string
	}{
		{0, "path", "0 paths"},
		{1, "path", "1 path"},
		{2, "path", "2 paths"},
		{1, "process", "1 process"},
		{3, "process", "3 processes"},
		{2, "box", "2 boxes"},
		{2, "branch", "2 branches"},
		{2, "entry", "2 entries"},
		{2, "day", "2 days"},
		{1, "entry", "1 entry"},
		{5, "external command", "5 external commands"},
	} {
		if got := Count(tc.n, tc.noun); got != tc.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}

func TestVerb(t *testing.T) {
	for _, tc := range []struct {
		n          int
		verb, want string
	}{
		{1, "are", "is"}, {2, "are", "are"}, {1, "were", "was"}, {0, "were", "were"},
		{1, "fail", "fails"}, {2, "fail", "fail"}, {1, "have", "has"},
	} {
		if got := Verb(tc.n, tc.verb); got != tc.want {
			t.Errorf("Verb(%d, %q) = %q, want %q", tc.n, tc.verb, got, tc.want)
		}
	}
}
