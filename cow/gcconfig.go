package cow

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// GCConfigFile is the name of the gc settings file in a root's state dir.
const GCConfigFile = "config.json"

// GCConfig is what `timeagent config` sets: the size budget that makes
// `run` collect the history when the journal's content passes it, and
// how long that gc keeps every task.
type GCConfig struct {
	// MaxSize is the budget in bytes (0: none, run never collects).
	MaxSize int64 `json:"maxSize,omitempty"`
	// Keep is how long every task is kept (nil: DefaultGCKeep).
	Keep *Duration `json:"keep,omitempty"`
}

// KeepOrDefault is Keep, or DefaultGCKeep when it is not set.
func (c GCConfig) KeepOrDefault() time.Duration {
	if c.Keep == nil {
		return DefaultGCKeep
	}
	return time.Duration(*c.Keep)
}

// Duration is a time.Duration written as text ("720h", "30d").
type Duration time.Duration

// MarshalText writes the duration in days when it is whole days.
func (d Duration) MarshalText() ([]byte, error) { return []byte(FormatDuration(time.Duration(d))), nil }

// UnmarshalText reads what ParseDuration reads.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// LoadGCConfig reads the gc settings of a state dir (zero when none).
func LoadGCConfig(stateDir string) (GCConfig, error) {
	var c GCConfig
	p := filepath.Join(stateDir, GCConfigFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read settings %s: %w", p, err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("read settings %s: %w (fix or delete the file)", p, err)
	}
	return c, nil
}

// SaveGCConfig writes the gc settings atomically (temporary file, fsync,
// rename), private to the user.
func SaveGCConfig(stateDir string, c GCConfig) error {
	p := filepath.Join(stateDir, GCConfigFile)
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("write settings %s: %w", p, err)
	}
	tmp, err := os.CreateTemp(stateDir, ".config-*")
	if err != nil {
		return fmt.Errorf("write settings %s: %w", p, err)
	}
	defer os.Remove(tmp.Name())
	if _, err = tmp.Write(append(b, '\n')); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		return fmt.Errorf("write settings %s: %w", p, err)
	}
	return nil
}

// ParseSize reads a byte count: a number with an optional unit B, K, M, G,
// T (powers of 1024; KiB, MB and the like are read the same way).
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "IB"), "B")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || v*float64(mult) > math.MaxInt64/2 {
		return 0, fmt.Errorf("invalid size %q: use a number of bytes with an optional unit, like 500M or 2G", s)
	}
	return int64(v * float64(mult)), nil
}

// FormatSize renders a byte count with a binary unit: 512 B, 1.5 KiB, 3.2 GiB.
func FormatSize(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= 1024
		if v < 1024 || u == "TiB" {
			return fmt.Sprintf("%.1f %s", v, u)
		}
	}
	return ""
}

// ParseDuration reads a duration: Go's form (90m, 36h) or whole days (30d).
func ParseDuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("invalid duration %q: use days like 30d or hours like 36h", s)
	if d, ok := strings.CutSuffix(strings.TrimSpace(s), "d"); ok {
		n, err := strconv.ParseUint(d, 10, 16)
		if err != nil {
			return 0, bad
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return 0, bad
	}
	return v, nil
}

// FormatDuration renders whole days as "30d", anything else as Go does.
func FormatDuration(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}
