package cow

import (
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "512": 512, "1K": 1024, "1KiB": 1024, "1kb": 1024,
		"1.5M": 3 << 19, "2G": 2 << 30, "1T": 1 << 40, " 3 M ": 3 << 20} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "big", "-1", "1Q", "1e30G", "M"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for in, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 3 << 19: "1.5 MiB", 5 << 30: "5.0 GiB", 3 << 40: "3.0 TiB"} {
		if got := FormatSize(in); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "0d": 0, "0s": 0, "36h": 36 * time.Hour, "90m": 90 * time.Minute} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
		if got, _ := ParseDuration(FormatDuration(want)); got != want {
			t.Errorf("FormatDuration(%v) does not read back", want)
		}
	}
	for _, in := range []string{"", "soon", "-1h", "1.5d", "d"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) accepted", in)
		}
	}
}

// TestGCConfigRoundTrip: settings written are read back; none is zero and
// keeps the default; an explicit 0 keep stays 0.
func TestGCConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	c, err := LoadGCConfig(dir)
	if err != nil || c.MaxSize != 0 || c.KeepOrDefault() != DefaultGCKeep {
		t.Fatalf("no file: %+v %v", c, err)
	}
	zero := Duration(0)
	if err := SaveGCConfig(dir, GCConfig{MaxSize: 2 << 30, Keep: &zero}); err != nil {
		t.Fatal(err)
	}
	c, err = LoadGCConfig(dir)
	if err != nil || c.MaxSize != 2<<30 || c.Keep == nil || c.KeepOrDefault() != 0 {
		t.Fatalf("read back: %+v %v", c, err)
	}
}
