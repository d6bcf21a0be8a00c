package main

import (
	"encoding/json"
	"io"
	"time"
)

// schemaVersion is the version of every JSON document timeagent prints.
const schemaVersion = 1

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// jsonTime formats a time for JSON (RFC 3339, UTC), empty for the zero time.
func jsonTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
