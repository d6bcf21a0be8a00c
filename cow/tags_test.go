package cow

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzValidTagName: an accepted name keeps every rule, so it can never be
// read as a task id or a flag nor be cut apart by whitespace.
func FuzzValidTagName(f *testing.F) {
	for _, s := range []string{"good", "v1.0", "12", "-x", "a b", "", "a\tb", "é", "0x1", strings.Repeat("n", 65), "x\x00", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := ValidTagName(name)
		if err != nil {
			if !strings.Contains(err.Error(), "invalid tag name") {
				t.Fatalf("%q: error does not say what is wrong: %v", name, err)
			}
			return
		}
		if name == "" || len(name) > MaxTagLen || !utf8.ValidString(name) || name[0] == '-' {
			t.Fatalf("accepted %q", name)
		}
		digits := true
		for _, r := range name {
			if unicode.IsSpace(r) || unicode.IsControl(r) {
				t.Fatalf("accepted %q with %q", name, r)
			}
			digits = digits && r >= '0' && r <= '9'
		}
		if digits {
			t.Fatalf("accepted all-digit %q", name)
		}
	})
}

func TestValidTagNameRules(t *testing.T) {
	for name, ok := range map[string]bool{"good": true, "v1.0": true, "1a": true, "é": true,
		"12": false, "-x": false, "a b": false, "": false, strings.Repeat("n", 65): false, strings.Repeat("n", 64): true} {
		if err := ValidTagName(name); (err == nil) != ok {
			t.Errorf("ValidTagName(%q) = %v", name, err)
		}
	}
}
